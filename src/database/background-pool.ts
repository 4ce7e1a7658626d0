import { AsyncLocalStorage } from 'async_hooks';
import { Inject } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { TransactionalAdapter } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm, TypeOrmTransactionOptions } from '@nestjs-cls/transactional-adapter-typeorm';
import { DataSource, EntityManager } from 'typeorm';

/**
 * Two connection pools per instance: the request pool (TypeORM's default `DataSource`, DATABASE_POOL_SIZE) and the
 * background pool (BACKGROUND_DATABASE_POOL_SIZE, `application_name` cluster-management-service-background), so a
 * request never waits for a connection behind the background loops. Which one a piece of code uses is decided
 * here, in one place:
 *  - a background pass runs inside `runAsBackgroundWork` (the jobs module does that for every pass and settle);
 *  - `TransactionHost` (`txHost.tx`, `withTransaction`, `@Transactional`) runs on the background pool inside it
 *    and on the request pool outside it, so a shared service (audit, activity, ...) called from a background
 *    transaction joins that transaction, on the background pool;
 *  - code that belongs to a loop only and talks to a `DataSource` directly injects `BACKGROUND_DATA_SOURCE`.
 */
export const BACKGROUND_CONNECTION = 'background';

/** The background pool's `DataSource` (a TypeORM connection named `background`). */
export const BACKGROUND_DATA_SOURCE = getDataSourceToken(BACKGROUND_CONNECTION) as string;

/** `application_name` of the background pool's sessions. */
export const BACKGROUND_APPLICATION_NAME = 'cluster-management-service-background';

/** Injects the background pool's `DataSource`. */
export const InjectBackgroundDataSource = (): ParameterDecorator => Inject(BACKGROUND_DATA_SOURCE);

const backgroundWork = new AsyncLocalStorage<true>();

/** Runs `fn` (and everything it starts) as background work: on the background pool. */
export function runAsBackgroundWork<T>(fn: () => T): T {
  return backgroundWork.run(true, fn);
}

/** True inside `runAsBackgroundWork`. */
export function isBackgroundWork(): boolean {
  return backgroundWork.getStore() === true;
}

/**
 * The transactional adapter of @nestjs-cls/transactional for the two pools: the library's TypeORM adapter, once
 * per pool, and each call routed to the background pool's when it runs inside `runAsBackgroundWork`. The
 * connection token is the request pool's `DataSource`; the background one comes in as an extra provider.
 */
export class PoolRoutingTransactionalAdapter implements TransactionalAdapter<DataSource, EntityManager, TypeOrmTransactionOptions> {
  readonly connectionToken = DataSource;
  readonly extraProviderTokens = [BACKGROUND_DATA_SOURCE];
  private readonly typeorm = new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource });

  readonly optionsFactory = (request: DataSource, [background]: unknown[]) => {
    const onRequest = this.typeorm.optionsFactory(request);
    const onBackground = this.typeorm.optionsFactory(background as DataSource);
    const pick = () => (isBackgroundWork() ? onBackground : onRequest);
    return {
      wrapWithTransaction: (...args: Parameters<typeof onRequest.wrapWithTransaction>) => pick().wrapWithTransaction(...args),
      wrapWithNestedTransaction: (...args: Parameters<NonNullable<typeof onRequest.wrapWithNestedTransaction>>) =>
        // A nested transaction runs on the outer one's connection (`tx`), whichever pool that came from.
        onRequest.wrapWithNestedTransaction!(...args),
      getFallbackInstance: () => pick().getFallbackInstance(),
    };
  };
}
