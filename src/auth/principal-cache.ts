import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { AfterQueryEvent, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';
import { DataSource, EntitySubscriberInterface } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { NotifyListener } from '../jobs/notify-listener';
import { MetricsService } from '../metrics/metrics.service';
import { OrganisationMemberEntity } from '../identity/organisation-member.entity';
import { OrganisationEntity } from '../identity/organisation.entity';
import { PersonalAccessTokenEntity } from '../identity/personal-access-token.entity';
import { OrganisationPrefetch, TokenFacts, TOUCH_LAST_USED_SQL } from '../tokens/tokens.service';
import { UserEntity } from '../identity/user.entity';

/** The channel the triggers of migration PrincipalCacheNotify notify on. */
export const PRINCIPAL_CACHE_CHANNEL = 'cms_principal_cache';
export const PRINCIPAL_CACHE_LISTENER_APPLICATION_NAME = 'cluster-management-service-principal-cache';
/** Organisations remembered per token; the least recently fetched one leaves first. */
export const ORGANISATIONS_PER_ENTRY = 32;

interface OrganisationSlot {
  prefetch: OrganisationPrefetch;
  /** performance.now() when it was read: a slot is trusted for the TTL from then, not from its entry's last refresh. */
  at: number;
}

interface Entry {
  user: UserEntity;
  token: PersonalAccessTokenEntity;
  /** By organisation slug, filled as requests name organisations (null organisation: no such slug). */
  organisations: Map<string, OrganisationSlot>;
}

/**
 * Statements by which this replica changes what authentication decides from; `INSERT`s of users and tokens
 * are left out (nothing cached can be about a row that did not exist).
 */
const WRITE = /^\s*(insert\s+into|update|delete\s+from|truncate(?:\s+table)?)\s+(?:only\s+)?(?:"?public"?\.)?"?(organisation_members|organisations|personal_access_tokens|users)"?(?=[\s(;,]|$)/i;

/** Whether a statement run by this replica may change what authentication decides (see WRITE). */
export function changesPrincipals(query: string): boolean {
  if (query === TOUCH_LAST_USED_SQL) return false;
  const m = WRITE.exec(query);
  if (!m) return false;
  return !(/^insert/i.test(m[1]) && (m[2].toLowerCase() === 'users' || m[2].toLowerCase() === 'personal_access_tokens'));
}

/** A copy a request may change without changing the cache. */
function copy<T extends object>(entity: T): T {
  const c = Object.assign(Object.create(Object.getPrototypeOf(entity) as object) as T, entity);
  // Keys, not entries: four copies per request, and an entry pair per property was most of their allocation.
  const fields = c as Record<string, unknown>;
  for (const k of Object.keys(fields)) if (Array.isArray(fields[k])) fields[k] = [...(fields[k] as unknown[])];
  return c;
}

/** Rough bytes of an entry, for the cache's memory bound. */
function sizeOf(entry: Entry): number {
  let n = JSON.stringify(entry.user).length + JSON.stringify(entry.token).length;
  for (const [slug, slot] of entry.organisations) {
    n += slug.length + JSON.stringify(slot.prefetch.organisation).length + JSON.stringify(slot.prefetch.member).length;
  }
  // JavaScript objects take about twice their JSON text, plus fixed overhead per object.
  return 2 * n + 512;
}

/**
 * What this replica knows about recently used personal access tokens, so that authenticating a request
 * (and resolving the organisation named in its path) needs no database statement on a hit.
 *
 * - Key: the token's SHA-256 hash (the token itself is never held). Value: the user, the token's facts, and per
 *   organisation slug the organisation and the caller's membership, filled lazily as requests name them.
 * - Bounded by PRINCIPAL_CACHE_MAX_ENTRIES and PRINCIPAL_CACHE_MAX_BYTES (lru-cache); every entry, and every
 *   organisation in it, is trusted for PRINCIPAL_CACHE_TTL_MS at most (0 turns the cache off).
 * - Invalidated on every replica by NOTIFY: database triggers (migration PrincipalCacheNotify) send one on
 *   `cms_principal_cache` for every committed change of a token, a user, a membership or an organisation.
 *   This replica's own writes also empty it when they commit (a caller who revokes a token and at once uses
 *   it again on the same replica must not be served from before the revocation; the NOTIFY only follows
 *   asynchronously).
 * - The LISTEN connection (re)made, or lost: the cache is emptied (notifications may have been missed).
 * - What depends on the request or the time (expiry against the injectable clock, the IP restriction against
 *   the client address, READ_ONLY against the method) is checked on every request, hit or not (TokensService.accept
 *   and the guards).
 */
@Injectable()
export class PrincipalCache implements OnModuleInit, OnModuleDestroy, EntitySubscriberInterface {
  private readonly logger = new Logger('PrincipalCache');
  private readonly cache: LRUCache<string, Entry> | null;
  private readonly ttlMs: number;
  private listener: NotifyListener | null = null;
  private listening = false;
  /** Bumped by every invalidation: a database read that started before one is not stored. */
  private version = 0;
  /** Payloads received, applied before the next lookup (or at the end of the current tick). */
  private pending: string[] = [];
  /** Query runners whose open transaction changed principals: the cache is emptied when it commits. */
  private readonly dirtyTransactions = new WeakSet<QueryRunner>();

  constructor(
    config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly metrics: MetricsService,
  ) {
    this.ttlMs = config.PRINCIPAL_CACHE_TTL_MS;
    this.cache =
      this.ttlMs > 0
        ? new LRUCache<string, Entry>({
            max: config.PRINCIPAL_CACHE_MAX_ENTRIES,
            maxSize: config.PRINCIPAL_CACHE_MAX_BYTES,
            sizeCalculation: sizeOf,
            ttl: this.ttlMs,
          })
        : null;
    if (this.cache) metrics.principalCacheSize = () => this.cache?.size ?? 0;
  }

  get enabled(): boolean {
    return this.cache !== null;
  }

  /** Whether the LISTEN connection is up (changes made on other replicas reach this one at once). */
  get isListening(): boolean {
    return this.listening;
  }

  /** Tokens held now. */
  get size(): number {
    this.applyPending();
    return this.cache?.size ?? 0;
  }

  onModuleInit(): void {
    if (!this.cache) return;
    this.dataSource.subscribers.push(this);
    this.listener = new NotifyListener((this.dataSource.options as { url?: string }).url, {
      applicationName: PRINCIPAL_CACHE_LISTENER_APPLICATION_NAME,
      purpose: 'the principal cache',
      metrics: this.metrics,
      fallback: `cached principals still expire within PRINCIPAL_CACHE_TTL_MS (${this.ttlMs} ms)`,
      onListening: () => {
        this.listening = true;
        this.clear('listener');
      },
      onLost: () => {
        this.listening = false;
        this.clear('listener');
      },
    });
    this.listener.add(PRINCIPAL_CACHE_CHANNEL, (payload) => {
      // Without a payload: the connection was made again (onListening empties the cache).
      if (payload !== undefined) this.notified(payload);
    });
  }

  async onModuleDestroy(): Promise<void> {
    const i = this.dataSource.subscribers.indexOf(this);
    if (i >= 0) this.dataSource.subscribers.splice(i, 1);
    this.listening = false;
    await this.listener?.close();
    this.listener = null;
  }

  /** The version to hand back to `store` after reading the database. */
  get currentVersion(): number {
    return this.version;
  }

  /**
   * The cached facts for a token hash (and the organisation slug, when the path names one), or undefined on a
   * miss. The token object is the cached one: `TokensService.accept` records its last use on it. Counts a hit
   * or a miss.
   */
  get(tokenHash: string, organisationSlug: string | undefined): TokenFacts | undefined {
    if (!this.cache) return undefined;
    this.applyPending();
    const entry = this.cache.get(tokenHash);
    let facts: TokenFacts | undefined;
    if (entry && organisationSlug === undefined) facts = { user: entry.user, token: entry.token };
    else if (entry && organisationSlug !== undefined) {
      const slot = entry.organisations.get(organisationSlug);
      if (slot && performance.now() - slot.at < this.ttlMs) facts = { user: entry.user, token: entry.token, organisation: slot.prefetch };
    }
    if (facts) this.metrics.principalCacheHits.inc();
    else this.metrics.principalCacheMisses.inc();
    return facts;
  }

  /**
   * Keeps what `TokensService.lookup` read, unless an invalidation arrived since `version` was taken (the read
   * may predate the change). Answers the facts to use: the cached objects when stored.
   */
  store(tokenHash: string, facts: TokenFacts, organisationSlug: string | undefined, version: number): TokenFacts {
    if (!this.cache) return facts;
    this.applyPending();
    if (version !== this.version) return facts;
    const previous = this.cache.peek(tokenHash);
    // The same token and user still (no invalidation since the read): the organisations read earlier stay.
    const organisations = previous && previous.token.id === facts.token.id ? previous.organisations : new Map<string, OrganisationSlot>();
    if (organisationSlug !== undefined && facts.organisation) {
      organisations.delete(organisationSlug);
      organisations.set(organisationSlug, { prefetch: facts.organisation, at: performance.now() });
      while (organisations.size > ORGANISATIONS_PER_ENTRY) organisations.delete(organisations.keys().next().value as string);
    }
    // The token object of the previous entry may have a newer lastUsedAt than this read: keep the later one.
    if (previous?.token.lastUsedAt && (!facts.token.lastUsedAt || previous.token.lastUsedAt > facts.token.lastUsedAt)) {
      facts.token.lastUsedAt = previous.token.lastUsedAt;
    }
    this.cache.set(tokenHash, { user: facts.user, token: facts.token, organisations });
    return facts;
  }

  /** Copies for the request: handlers may change what they are given without changing the cache. */
  detach(facts: TokenFacts): TokenFacts {
    const o = facts.organisation;
    return {
      user: copy(facts.user),
      token: copy(facts.token),
      ...(o
        ? {
            organisation: {
              slug: o.slug,
              organisation: o.organisation ? copy<OrganisationEntity>(o.organisation) : null,
              member: o.member ? copy<OrganisationMemberEntity>(o.member) : null,
            },
          }
        : {}),
    };
  }

  /** Empties the cache (all tokens), counted under `cause`. */
  clear(cause: 'all' | 'local' | 'listener'): void {
    this.version++;
    this.pending = [];
    this.metrics.principalCacheInvalidations.inc({ cause });
    this.cache?.clear();
  }

  /** A NOTIFY payload from the triggers: applied before the next lookup. */
  notified(payload: string): void {
    if (!this.cache) return;
    this.version++;
    if (this.pending.push(payload) === 1) queueMicrotask(() => this.applyPending());
  }

  private applyPending(): void {
    if (!this.cache || this.pending.length === 0) return;
    const payloads = this.pending;
    this.pending = [];
    const tokens = new Set<string>();
    const users = new Set<string>();
    const organisationIds = new Set<string>();
    const slugs = new Set<string>();
    for (const payload of payloads) {
      const sep = payload.indexOf(':');
      const kind = sep < 0 ? payload : payload.slice(0, sep);
      const value = payload.slice(sep + 1);
      if (kind === 'token') tokens.add(value);
      else if (kind === 'user') users.add(value);
      else if (kind === 'organisation') organisationIds.add(value);
      else if (kind === 'slug') slugs.add(value);
      else {
        // 'all' (a TRUNCATE), or a payload this version does not know: forget everything.
        if (kind !== 'all') this.logger.warn({ payload }, 'Unknown principal cache notification; emptying the cache');
        this.clear('all');
        return;
      }
      this.metrics.principalCacheInvalidations.inc({ cause: kind });
    }
    const drop: string[] = [];
    for (const [hash, entry] of this.cache.entries()) {
      if (tokens.has(String(entry.token.id)) || users.has(String(entry.user.id))) {
        drop.push(hash);
        continue;
      }
      for (const [slug, slot] of entry.organisations) {
        const org = slot.prefetch.organisation;
        if (slugs.has(slug) || (org && organisationIds.has(String(org.id)))) entry.organisations.delete(slug);
      }
    }
    for (const hash of drop) this.cache.delete(hash);
  }

  // TypeORM subscriber: this replica's own writes, through repositories, query builders or raw SQL alike.

  afterQuery(event: AfterQueryEvent): void {
    if (!event.success || !changesPrincipals(event.query)) return;
    const runner = event.queryRunner;
    if (runner?.isTransactionActive) this.dirtyTransactions.add(runner);
    else this.clear('local');
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    const runner = event.queryRunner;
    if (!runner || runner.isTransactionActive || !this.dirtyTransactions.has(runner)) return;
    this.dirtyTransactions.delete(runner);
    this.clear('local');
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    const runner = event.queryRunner;
    if (runner && !runner.isTransactionActive) this.dirtyTransactions.delete(runner);
  }
}
