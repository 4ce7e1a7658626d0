import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { buildDataSourceOptions, runMigrationsLocked } from './data-source-options';
import { DATABASE_WAIT_BUDGET, DatabaseWaitBudget } from './database-wait-budget';

/** TypeORM on the resolved database URL, migrations applied at start, and the request-scoped transaction context. */
@Module({})
export class DatabaseModule {
  static forRoot(databaseUrl: string): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig) =>
            buildDataSourceOptions(databaseUrl, { poolSize: config.DATABASE_POOL_SIZE, timeoutMs: config.DATABASE_TIMEOUT_MS }),
          dataSourceFactory: async (options) => {
            const ds = await new DataSource(options!).initialize();
            await runMigrationsLocked(ds);
            return ds;
          },
        }),
        ClsModule.forRoot({
          global: true,
          // Each request gets one budget of DATABASE_TIMEOUT_MS for all its database waits together.
          middleware: {
            mount: true,
            setup: (cls) => cls.set(DATABASE_WAIT_BUDGET, new DatabaseWaitBudget()),
            // No CLS proxy providers exist (nothing uses @InjectableProxy or the transaction proxy); resolving them
            // cost every request a dynamic require() inside nestjs-cls (~0.25 ms of the event loop in the bench profile).
            resolveProxyProviders: false,
          },
          plugins: [
            new ClsPluginTransactional({
              adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }),
            }),
          ],
        }),
      ],
    };
  }
}
