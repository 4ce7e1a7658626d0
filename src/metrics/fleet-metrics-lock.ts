import { Client } from 'pg';
import type { AppConfig } from '../config/app-config';

/**
 * The advisory lock whose holder exports the fleet-wide gauges. The service's other fixed keys: 724001 migrations,
 * 724002 bootstrap administrator, 724003 catalog and demo data, 724004 webhook claims, 724007 scheduler.
 */
export const FLEET_METRICS_LOCK = 724_039;

/** `application_name` of the lock's session. */
export const FLEET_METRICS_APPLICATION_NAME = 'cluster-management-service-metrics';

/**
 * Which process exports the fleet-wide gauges: the one holding a session-level advisory lock, on a connection of its
 * own (one per process with FLEET_METRICS_ENABLED, opened at its first scrape). A process that does not hold it tries
 * again at each scrape, so when the holder stops (its session ends, and the lock with it) the next replica scraped
 * takes over. A lost connection is not holding: the gauges are omitted until the lock is taken again.
 */
export class FleetMetricsLock {
  private client?: Client;
  private holding = false;
  private attempt?: Promise<boolean>;
  private closed = false;

  constructor(
    private readonly config: AppConfig,
    /** The database's URL (the request pool's; DATABASE_URL or the embedded database's). */
    private readonly url: string | undefined,
  ) {}

  /** Whether this process holds the lock now (trying to take it when it does not). */
  held(): Promise<boolean> {
    if (!this.config.fleetMetricsEnabled || !this.url || this.closed) return Promise.resolve(false);
    return (this.attempt ??= this.check().finally(() => (this.attempt = undefined)));
  }

  private async check(): Promise<boolean> {
    try {
      if (!this.client) {
        const client = new Client({
          connectionString: this.url,
          application_name: FLEET_METRICS_APPLICATION_NAME,
          connectionTimeoutMillis: this.config.DATABASE_TIMEOUT_MS,
          query_timeout: this.config.DATABASE_TIMEOUT_MS,
        });
        // A connection that breaks later: drop it (and with it the lock), reconnect at the next scrape.
        client.on('error', () => this.drop(client));
        client.on('end', () => this.drop(client));
        this.client = client;
        await client.connect();
      }
      if (this.holding) {
        await this.client.query('SELECT 1');
        return true;
      }
      const { rows } = await this.client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [FLEET_METRICS_LOCK]);
      this.holding = rows[0].locked;
      return this.holding;
    } catch {
      if (this.client) this.drop(this.client);
      return false;
    }
  }

  private drop(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.holding = false;
    void client.end().catch(() => undefined);
  }

  /** At shutdown: ends the session, which frees the lock for another replica. */
  async release(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    this.holding = false;
    await this.attempt?.catch(() => undefined);
    if (client) await client.end().catch(() => undefined);
  }
}
