import { DynamicModule, Module } from '@nestjs/common';
import { CLS_REQUEST_ID } from '../common/request-id';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { ClsModule } from 'nestjs-cls';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { BACKGROUND_APPLICATION_NAME, BACKGROUND_CONNECTION, PoolRoutingTransactionalAdapter } from './background-pool';
import { buildDataSourceOptions, migrateDatabase, waitForSchema } from './data-source-options';
import { DATABASE_WAIT_BUDGET, DatabaseWaitBudget } from './database-wait-budget';

/**
 * TypeORM on the resolved database URL, migrations applied at start, and the request-scoped transaction context.
 * Two pools (background-pool.ts): the request pool (the default `DataSource`) and the background loops' pool
 * (`BACKGROUND_DATA_SOURCE`); both close at application shutdown, after the background jobs have drained.
 */
@Module({})
export class DatabaseModule {
  static forRoot(
    databaseUrl: string,
    options: {
      /** Apply pending migrations at start (MIGRATE_AT_START); otherwise wait until the schema has them. */
      migrate?: boolean;
      /** Aborted by a signal during start-up: the wait for the migration lock or the schema ends. */
      startupSignal?: AbortSignal;
      /** Told why start-up waits for the schema (readiness says it meanwhile, src/main.ts). */
      onSchemaWait?: (reason: string) => void;
      /** The request budget (DATABASE_TIMEOUT_MS) and READ_RETRY_WAIT_MS, which each request's budget carries. */
      budget?: { timeoutMs: number; readRetryWaitMs: number };
    } = {},
  ): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig) => ({
            ...buildDataSourceOptions(databaseUrl, { poolSize: config.DATABASE_POOL_SIZE, timeoutMs: config.DATABASE_TIMEOUT_MS }),
            // A start-up stopped by a signal is not tried again.
            toRetry: () => !options.startupSignal?.aborted,
          }),
          dataSourceFactory: async (dataSourceOptions) => {
            // Migrations on connections of their own, without the pools' statement timeout. A SIGTERM during start-up
            // ends the wait for the migration lock or for the schema (src/main.ts).
            if (options.migrate) await migrateDatabase(databaseUrl, { signal: options.startupSignal });
            const ds = await new DataSource(dataSourceOptions!).initialize();
            try {
              if (!options.migrate) await waitForSchema(ds, { signal: options.startupSignal, onWait: options.onSchemaWait });
            } catch (e) {
              await ds.destroy();
              throw e;
            }
            return ds;
          },
        }),
        TypeOrmModule.forRootAsync({
          name: BACKGROUND_CONNECTION,
          inject: [AppConfig],
          useFactory: (config: AppConfig) =>
            buildDataSourceOptions(databaseUrl, {
              poolSize: config.BACKGROUND_DATABASE_POOL_SIZE,
              timeoutMs: config.DATABASE_TIMEOUT_MS,
              applicationName: BACKGROUND_APPLICATION_NAME,
            }),
          // No migrations here: the request pool's data source applies them at start.
          dataSourceFactory: async (options) => new DataSource(options!).initialize(),
        }),
        ClsModule.forRoot({
          global: true,
          // Each request gets one budget of DATABASE_TIMEOUT_MS for all its database waits together.
          middleware: {
            mount: true,
            setup: (cls, req: { id?: string }) => {
              cls.set(DATABASE_WAIT_BUDGET, new DatabaseWaitBudget(options.budget?.timeoutMs, options.budget?.readRetryWaitMs));
              // Fastify's request id (X-Request-Id), for the lines the application writes while handling it.
              cls.set(CLS_REQUEST_ID, req.id);
            },
            // No CLS proxy providers exist (nothing uses @InjectableProxy or the transaction proxy); resolving them
            // cost every request a dynamic require() inside nestjs-cls (~0.25 ms of the event loop in the bench profile).
            resolveProxyProviders: false,
          },
          plugins: [
            new ClsPluginTransactional({
              // TransactionHost runs on the request pool, or on the background pool inside background work.
              adapter: new PoolRoutingTransactionalAdapter(),
            }),
          ],
        }),
      ],
    };
  }
}
