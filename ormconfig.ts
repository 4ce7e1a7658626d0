import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './src/database/data-source-options';

/**
 * The DataSource the TypeORM CLI uses (`typeorm -d ormconfig.ts ...`). It needs DATABASE_URL;
 * `npm run migration:run` (scripts/migrate.ts) also covers the embedded database.
 */
const url = process.env.DATABASE_URL;
if (!url) {
  throw new Error('ormconfig.ts needs DATABASE_URL; for the embedded database use `npm run migration:run`.');
}

export default new DataSource(buildDataSourceOptions(url));
