import { randomUUID } from 'crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { ClusterEntity, OBSERVE_CANDIDATE_PREDICATE, RECONCILE_CANDIDATE_PREDICATE } from '../clusters/cluster.entity';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { jsonRowToEntity } from '../database/json-row';

/** A cluster this replica holds the lease on: only the claim with this token may record. */
export interface Claim {
  id: number;
  token: string;
  now: Date;
}

/** A claim with its cluster's row as the claim (or renewal) left it. */
export interface ClaimedCluster extends Claim {
  cluster: ClusterEntity;
}

/** A cluster row locked in a record transaction while its claim holds the lease, with the slugs its audit row names. */
export interface HeldCluster {
  cluster: ClusterEntity;
  organisationSlug: string | null;
  environmentSlug: string | null;
}

/** Settled clusters leased together for one observation. */
export interface ObservationClaim {
  ids: number[];
  token: string;
  now: Date;
}

/** Runs SQL: the pool (`DataSource`) or the transaction's manager. */
interface Sql {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * The lease SQL of the reconciler. A claim sets `reconcile_lease_until` and `reconcile_lease_token` on rows it
 * takes with `FOR UPDATE SKIP LOCKED` (rows whose lease is live are skipped), in one short statement; a record
 * locks the row again and writes only while the token is still its own. So one step per cluster runs at a time
 * across all replicas, and a crashed replica's clusters are taken over when their leases pass.
 */
@Injectable()
export class ClusterLeases {
  constructor(
    // A loop's own SQL runs on the background pool (background-pool.ts).
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  /**
   * Leases up to `limit` due clusters (none of `exclude`), each to a claim of its own, in one statement that also
   * answers their rows (the driver call needs no read of its own); fewer or none when fewer are due.
   */
  async claim(exclude: number[], limit = 1): Promise<ClaimedCluster[]> {
    const now = this.clock.now();
    const rows: Record<string, unknown>[] = await this.dataSource.query(
      `WITH picked AS (
         SELECT id, gen_random_uuid() AS token FROM clusters
          WHERE ${RECONCILE_CANDIDATE_PREDICATE}
            AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
            AND (reconcile_lease_until IS NULL OR reconcile_lease_until <= $1)
            AND NOT (id = ANY($2::bigint[]))
          ORDER BY next_attempt_at NULLS FIRST, id
          LIMIT ${Math.max(1, Math.floor(limit))}
          FOR UPDATE SKIP LOCKED)
       , claimed AS (
         UPDATE clusters c SET reconcile_lease_until = $3, reconcile_lease_token = picked.token
           FROM picked WHERE c.id = picked.id
         RETURNING c.*)
       SELECT * FROM claimed`,
      [now, exclude, this.leaseUntil(now)],
    );
    return rows.map((row) => this.claimed(row, now));
  }

  /**
   * Extends a claim's lease to RECONCILE_LEASE_SECONDS from now (a claim taken ahead that waited for a worker),
   * answering the row as it is now; null when the lease passed to another claim meanwhile.
   */
  async renew(claim: Claim): Promise<ClaimedCluster | null> {
    const now = this.clock.now();
    const [rows] = (await this.dataSource.query(`UPDATE clusters SET reconcile_lease_until = $3 WHERE id = $1 AND reconcile_lease_token = $2 RETURNING *`, [
      claim.id,
      claim.token,
      this.leaseUntil(now),
    ])) as [Record<string, unknown>[], number];
    return rows.length ? this.claimed(rows[0], now) : null;
  }

  /** Gives a claim's lease back (nothing when it passed to another claim meanwhile). */
  async release(claim: Claim): Promise<void> {
    await this.dataSource.query(
      `UPDATE clusters SET reconcile_lease_until = NULL, reconcile_lease_token = NULL WHERE id = $1 AND reconcile_lease_token = $2`,
      [claim.id, claim.token],
    );
  }

  /**
   * In the record transaction: locks the rows whose lease these claims still hold (in id order, so concurrent
   * record transactions cannot deadlock on each other) and answers them with their organisation's and
   * environment's slugs (for the audit rows), by cluster id; a claim whose lease passed is missing.
   */
  async lockClaimed(tx: Sql, claims: Claim[]): Promise<Map<number, HeldCluster>> {
    const rows = (await tx.query(
      `SELECT c.*, o.slug AS held_org_slug, e.slug AS held_env_slug
         FROM clusters c
         LEFT JOIN organisations o ON o.id = c.organisation_id
         LEFT JOIN environments e ON e.id = c.environment_id
        WHERE (c.id, c.reconcile_lease_token) IN (SELECT * FROM unnest($1::bigint[], $2::uuid[]))
        ORDER BY c.id
        FOR UPDATE OF c`,
      [claims.map((c) => c.id), claims.map((c) => c.token)],
    )) as Record<string, unknown>[];
    return new Map(
      rows.map((row) => {
        const cluster = jsonRowToEntity(this.dataSource, ClusterEntity, row);
        return [cluster.id, { cluster, organisationSlug: row.held_org_slug as string | null, environmentSlug: row.held_env_slug as string | null }];
      }),
    );
  }

  /** In the record transaction, after `lockClaimed`: the lease ends (where the step's own update did not end it). */
  async clear(tx: Sql, id: number): Promise<void> {
    await tx.query(`UPDATE clusters SET reconcile_lease_until = NULL, reconcile_lease_token = NULL WHERE id = $1`, [id]);
  }

  /**
   * Leases up to `limit` settled clusters due for observation (not observed for OBSERVE_EVERY_SECONDS, oldest
   * observation first, none of `exclude`), in one short statement.
   */
  async claimObservations(exclude: number[], limit: number): Promise<ObservationClaim | null> {
    const now = this.clock.now();
    const token = randomUUID();
    const rows: { id: string }[] = await this.dataSource.transaction(async (m) => {
      // The planner underestimates the settled set (it guesses `version IS NOT DISTINCT FROM observed_version`
      // rarely holds) and would collect every due row by bitmap and sort them; walking clusters_observe_idx in
      // order stops after the batch (about 1 ms instead of 50-80 ms at 100,000 clusters).
      await m.query(`SET LOCAL enable_bitmapscan = off`);
      return m.query(
        `WITH claimed AS (
           UPDATE clusters SET reconcile_lease_until = $4, reconcile_lease_token = $5
            WHERE id IN (SELECT id FROM clusters
                          WHERE ${OBSERVE_CANDIDATE_PREDICATE}
                            AND (observed_at IS NULL OR observed_at <= $1)
                            AND (reconcile_lease_until IS NULL OR reconcile_lease_until <= $2)
                            AND NOT (id = ANY($3::bigint[]))
                          ORDER BY observed_at NULLS FIRST, id
                          LIMIT ${Number(limit)}
                          FOR UPDATE SKIP LOCKED)
            RETURNING id)
         SELECT id FROM claimed`,
        [new Date(now.getTime() - this.config.OBSERVE_EVERY_SECONDS * 1000), now, exclude, this.leaseUntil(now), token],
      );
    });
    return rows.length ? { ids: rows.map((r) => Number(r.id)), token, now } : null;
  }

  /** In the record transaction: locks the clusters of the batch whose lease it still holds; answers their ids. */
  async lockHeld(tx: Sql, batch: ObservationClaim): Promise<number[]> {
    const held = (await tx.query(`SELECT id FROM clusters WHERE id = ANY($1::bigint[]) AND reconcile_lease_token = $2 ORDER BY id FOR UPDATE`, [
      batch.ids,
      batch.token,
    ])) as { id: string }[];
    return held.map((h) => Number(h.id));
  }

  /** Gives back the leases of a batch still held (through the pool, or in `tx`). */
  async releaseBatch(batch: ObservationClaim, tx: Sql = this.dataSource): Promise<void> {
    await tx.query(`UPDATE clusters SET reconcile_lease_until = NULL, reconcile_lease_token = NULL WHERE id = ANY($1::bigint[]) AND reconcile_lease_token = $2`, [
      batch.ids,
      batch.token,
    ]);
  }

  /**
   * An unexpected error (not a driver answer): the cluster backs off without changing its status. The lease is
   * given back, unless `keepLease` (a driver call given up on may still be working, so nobody calls the driver for
   * this cluster again before the lease has run out).
   */
  async backOff(claim: Claim, error: string, keepLease: boolean): Promise<void> {
    await this.dataSource.query(
      `UPDATE clusters SET attempts = attempts + 1, last_error = $3,
              next_attempt_at = $4::timestamptz + make_interval(secs => LEAST(300, 5 * power(2, attempts))),
              reconcile_lease_until = CASE WHEN $5 THEN reconcile_lease_until END,
              reconcile_lease_token = CASE WHEN $5 THEN reconcile_lease_token END
        WHERE id = $1 AND reconcile_lease_token = $2`,
      [claim.id, claim.token, error.slice(0, 500), this.clock.now(), keepLease],
    );
  }

  private claimed(row: Record<string, unknown>, now: Date): ClaimedCluster {
    const cluster = jsonRowToEntity(this.dataSource, ClusterEntity, row);
    return { id: cluster.id, token: cluster.reconcileLeaseToken!, now, cluster };
  }

  private leaseUntil(now: Date): Date {
    return new Date(now.getTime() + this.config.RECONCILE_LEASE_SECONDS * 1000);
  }
}
