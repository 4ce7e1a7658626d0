import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { DataSource } from 'typeorm';
import { SecretBox } from '../common/secret-box';
import { InjectBackgroundDataSource } from '../database/background-pool';
import { NotifyListener } from '../jobs/notify-listener';
import { MetricsService } from '../metrics/metrics.service';
import { ClusterDriverResolver, type DriverTarget } from './cluster-driver-resolver';
import { clusterDriverSecretContext } from './cluster-driver.entity';
import type { ClusterDriver } from './driver-contract';
import { HTTP_DRIVER_DEFAULTS, HttpClusterDriver, type DriverCallObserver, type DriverCallOperation, type DriverCallOutcome } from './http-cluster-driver';

export const CLUSTER_DRIVERS_CHANNEL = 'cms_cluster_drivers';
export const CLUSTER_DRIVERS_LISTENER_APPLICATION_NAME = 'cluster-management-service-cluster-drivers';
/** While the LISTEN connection is down, the registry is read again at least this often. */
export const UNLISTENED_RELOAD_MS = 5_000;

/** What an HttpClusterDriver is built from: a registered driver's row. */
export interface DriverRow {
  id: number;
  identity: string;
  name: string;
  url: string;
  secret_ciphertext: string;
  cloud_providers: string[];
  cloud_profiles: string[];
  timeout_ms: number;
  max_in_flight: number;
}

interface Snapshot {
  byProfile: Map<string, HttpClusterDriver>;
  byProvider: Map<string, HttpClusterDriver>;
  loadedAt: number;
}

/**
 * The registry as the reconciler sees it: a cluster uses the enabled driver registered for its cloud profile, else the
 * one registered for its cloud provider, else (null) the configured default. The enabled drivers are held in memory
 * and read again after every change: the table's trigger NOTIFYs `cms_cluster_drivers` on commit, so every replica
 * sees a change at once; while the LISTEN connection is down the registry is read at least every
 * UNLISTENED_RELOAD_MS. Each driver keeps one HttpClusterDriver (its concurrency cap, backoff and in-flight calls) for
 * as long as its URL, secret and limits stay the same. The signing secrets are opened here, never the clusters' cloud
 * credentials (those are put in each request by the reconciler and held by nothing).
 */
@Injectable()
export class RegisteredDriverResolver extends ClusterDriverResolver implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('ClusterDrivers');
  private snapshot: Snapshot | null = null;
  private loading: Promise<Snapshot> | null = null;
  /** Bumped by every invalidation: a load that started before one is not kept as fresh. */
  private epoch = 0;
  private listener: NotifyListener | null = null;
  private listening = false;
  /** One client per registered driver, by id, with the row fields it was built from. */
  private readonly clients = new Map<number, { fingerprint: string; driver: HttpClusterDriver }>();
  readonly observer: DriverCallObserver;

  constructor(
    // The reconciler resolves drivers in its passes: the registry is read on the background pool, so a pass never
    // waits for a request connection (test/jobs/background-pool.e2e-spec.ts).
    @InjectBackgroundDataSource() private readonly dataSource: DataSource,
    private readonly secrets: SecretBox,
    private readonly metrics: MetricsService,
  ) {
    super();
    const clients = this.clients;
    const calls = new Counter({
      name: 'cms_cluster_driver_calls_total',
      help: 'Calls to registered (out-of-process) cluster drivers by driver, operation and outcome (ok, retryable, terminal, timeout; backoff: held back without a request)',
      labelNames: ['driver', 'operation', 'outcome'] as const,
      registers: [metrics.registry],
    });
    const latency = new Histogram({
      name: 'cms_cluster_driver_call_duration_seconds',
      help: 'Duration of calls to registered cluster drivers (waiting for a slot included) by driver and operation',
      labelNames: ['driver', 'operation'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [metrics.registry],
    });
    new Gauge({
      name: 'cms_cluster_driver_calls_in_flight',
      help: 'Calls to each registered cluster driver running now on this replica',
      labelNames: ['driver'] as const,
      registers: [metrics.registry],
      collect: function (this: Gauge<'driver'>) {
        this.reset();
        for (const { driver } of clients.values()) this.set({ driver: driver.name }, driver.callsInFlight);
      },
    });
    this.observer = {
      finished: (driver: string, operation: DriverCallOperation, outcome: DriverCallOutcome, seconds: number) => {
        calls.inc({ driver, operation, outcome });
        if (outcome !== 'backoff') latency.observe({ driver, operation }, seconds);
      },
    };
  }

  onModuleInit(): void {
    this.listener = new NotifyListener((this.dataSource.options as { url?: string }).url, {
      applicationName: CLUSTER_DRIVERS_LISTENER_APPLICATION_NAME,
      purpose: 'the cluster driver registry',
      metrics: this.metrics,
      fallback: `the registry is read again every ${UNLISTENED_RELOAD_MS} ms`,
      onListening: () => {
        this.listening = true;
        this.invalidate();
      },
      onLost: () => {
        this.listening = false;
        this.invalidate();
      },
    });
    this.listener.add(CLUSTER_DRIVERS_CHANNEL, () => this.invalidate());
  }

  async onModuleDestroy(): Promise<void> {
    this.listening = false;
    await this.listener?.close();
    this.listener = null;
  }

  /** The registry changed (a NOTIFY, or a write on this replica): the next resolution reads it again. */
  invalidate(): void {
    this.epoch++;
    this.snapshot = null;
  }

  async resolve(target: DriverTarget): Promise<ClusterDriver | null> {
    const snapshot = await this.current();
    if (target.cloudProfile) {
      const byProfile = snapshot.byProfile.get(target.cloudProfile);
      if (byProfile) return byProfile;
    }
    return snapshot.byProvider.get(target.cloudProvider) ?? null;
  }

  /** The client of a registered driver (for the health check), sharing its limits and metrics with the reconciler's calls. */
  clientFor(row: DriverRow): HttpClusterDriver {
    const fingerprint = JSON.stringify([row.name, row.url, row.secret_ciphertext, row.timeout_ms, row.max_in_flight]);
    const known = this.clients.get(Number(row.id));
    if (known && known.fingerprint === fingerprint) return known.driver;
    const driver = new HttpClusterDriver(
      {
        ...HTTP_DRIVER_DEFAULTS,
        name: row.name,
        url: row.url,
        secret: this.secrets.open(row.secret_ciphertext, clusterDriverSecretContext(row.identity)),
        timeoutMs: row.timeout_ms,
        maxInFlight: row.max_in_flight,
      },
      this.observer,
    );
    this.clients.set(Number(row.id), { fingerprint, driver });
    return driver;
  }

  /** Forgets the client of a driver that was deleted. */
  forget(id: number): void {
    this.clients.delete(Number(id));
  }

  private async current(): Promise<Snapshot> {
    const s = this.snapshot;
    if (s && (this.listening || Date.now() - s.loadedAt < UNLISTENED_RELOAD_MS)) return s;
    this.loading ??= this.load().finally(() => (this.loading = null));
    return this.loading;
  }

  private async load(): Promise<Snapshot> {
    const epoch = this.epoch;
    const [rows, profiles, providers] = await Promise.all([
      this.dataSource.query(
        `SELECT id, identity, name, url, secret_ciphertext, cloud_providers, cloud_profiles, timeout_ms, max_in_flight
           FROM cluster_drivers WHERE enabled ORDER BY id`,
      ) as Promise<DriverRow[]>,
      this.dataSource.query(`SELECT slug, identity::text AS identity FROM cloud_profiles`) as Promise<{ slug: string; identity: string }[]>,
      this.dataSource.query(`SELECT slug, type FROM cloud_providers`) as Promise<{ slug: string; type: string }[]>,
    ]);
    const snapshot: Snapshot = { byProfile: new Map(), byProvider: new Map(), loadedAt: Date.now() };
    const enabled = new Set(rows.map((r) => Number(r.id)));
    for (const id of this.clients.keys()) if (!enabled.has(id)) this.clients.delete(id);
    for (const row of rows) {
      let driver: HttpClusterDriver;
      try {
        driver = this.clientFor(row);
      } catch {
        // A secret that cannot be opened (another encryption key): the driver serves nothing until its secret is set again.
        this.logger.warn({ driver: row.name }, 'The signing secret of a registered cluster driver could not be decrypted; set it again');
        continue;
      }
      for (const slug of row.cloud_profiles) {
        snapshot.byProfile.set(slug, driver);
        const identity = profiles.find((p) => p.slug === slug)?.identity;
        if (identity) snapshot.byProfile.set(identity, driver);
      }
      for (const type of row.cloud_providers) {
        snapshot.byProvider.set(type, driver);
        for (const p of providers) if (p.type === type) snapshot.byProvider.set(p.slug, driver);
      }
    }
    if (epoch === this.epoch) this.snapshot = snapshot;
    return snapshot;
  }
}
