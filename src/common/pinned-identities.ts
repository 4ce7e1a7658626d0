import { randomUUID } from 'crypto';
import { ClsServiceManager } from 'nestjs-cls';
import { EntitySubscriberInterface, EventSubscriber, InsertEvent } from 'typeorm';

const KEY = 'identities.pinned';

/**
 * Identities chosen in advance for the next row inserted into a table, within the current CLS context only.
 * The demo organisation (src/demo) is created through the ordinary services with the fixed UUIDs the API
 * document uses as examples; everywhere else no identity is pinned and every row gets a random one.
 * Pinning a table again replaces its earlier pin.
 */
export function pinIdentities(identities: Record<string, string>): void {
  const cls = ClsServiceManager.getClsService();
  if (!cls.isActive()) throw new Error('pinIdentities needs an active CLS context');
  const pinned = cls.get<Map<string, string> | undefined>(KEY) ?? new Map<string, string>();
  for (const [table, identity] of Object.entries(identities)) pinned.set(table, identity);
  cls.set(KEY, pinned);
}

/** The identity pinned for the next row of `table`, consumed by this call; undefined when none is. */
export function takePinnedIdentity(table: string): string | undefined {
  const cls = ClsServiceManager.getClsService();
  if (!cls.isActive()) return undefined;
  const pinned = cls.get<Map<string, string> | undefined>(KEY);
  const identity = pinned?.get(table);
  if (identity !== undefined) pinned!.delete(table);
  return identity;
}

/** A new row's identity: the pinned one for `table` if any, else a random UUID. */
export function newIdentity(table: string): string {
  return takePinnedIdentity(table) ?? randomUUID();
}

/** Rows inserted through TypeORM (save/insert) get the pinned identity of their table, if one is pinned. */
@EventSubscriber()
export class PinnedIdentitySubscriber implements EntitySubscriberInterface {
  beforeInsert(event: InsertEvent<Record<string, unknown>>): void {
    const entity = event.entity;
    if (!entity || entity.identity !== undefined || !event.metadata.findColumnWithPropertyName('identity')) return;
    const identity = takePinnedIdentity(event.metadata.tableName);
    if (identity !== undefined) entity.identity = identity;
  }
}
