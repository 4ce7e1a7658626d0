import { Logger } from '@nestjs/common';
import { Client } from 'pg';

/** Pause before the LISTEN connection is tried again after it was lost or could not be made. */
export const LISTEN_RETRY_MS = 5000;
export const LISTENER_APPLICATION_NAME = 'cluster-management-service-listener';

export interface NotifyListenerOptions {
  /** `application_name` of the connection (pg_stat_activity), so each listener can be told apart. */
  applicationName?: string;
  /** Names the listener in its log lines. */
  purpose?: string;
  /** What still holds while the connection is down, for the log lines. */
  fallback?: string;
  /** Called each time the LISTEN connection is (again) listening on every channel: notifications sent before are not seen. */
  onListening?: (reconnect: boolean) => void;
  /** Called when an established LISTEN connection is lost. */
  onLost?: () => void;
}

/**
 * One PostgreSQL connection per replica that LISTENs on the channels of the background loops and wakes a loop
 * when its channel is notified. A lost connection is made again (after LISTEN_RETRY_MS) and then wakes every
 * loop once, since notifications sent meanwhile are gone; the loops' polling stays the safety net throughout.
 * Outside the pool: a LISTEN holds its session.
 */
export class NotifyListener {
  private readonly logger = new Logger('BackgroundJobs');
  private readonly channels = new Map<string, ((payload?: string) => void)[]>();
  private client: Client | null = null;
  /** Channels LISTENed on by `client`. */
  private listening = new Set<string>();
  private connecting = false;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly url: string | undefined,
    private readonly options: NotifyListenerOptions = {},
  ) {}

  /**
   * Wakes `wake` on every NOTIFY of `channel` (with its payload); connects on first use. After a lost
   * connection is made again, every `wake` is called once without a payload.
   */
  add(channel: string, wake: (payload?: string) => void): void {
    if (this.closed) return;
    this.channels.set(channel, [...(this.channels.get(channel) ?? []), wake]);
    if (this.client) this.listenAll(this.client).catch((err) => this.logger.warn({ err, channel }, 'LISTEN failed; polling continues'));
    else if (!this.connecting && !this.retry) void this.connect(false);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(reconnect: boolean): Promise<void> {
    this.retry = null;
    if (this.closed) return;
    this.connecting = true;
    const client = new Client({ connectionString: this.url, application_name: this.options.applicationName ?? LISTENER_APPLICATION_NAME });
    client.on('notification', (n) => this.channels.get(n.channel)?.forEach((wake) => wake(n.payload ?? '')));
    client.on('error', (err) => {
      // At shutdown the database may stop before this connection is ended: nothing to report then.
      if (!this.closed) this.logger.warn({ err }, `The LISTEN connection of ${this.purpose} was lost; ${this.fallback}`);
    });
    client.on('end', () => {
      if (this.client === client && !this.closed) {
        this.client = null;
        this.options.onLost?.();
        this.scheduleRetry();
      }
    });
    try {
      await client.connect();
      this.listening = new Set();
      await this.listenAll(client);
      if (this.closed) {
        await client.end();
        return;
      }
      this.client = client;
      // Channels added while the connection was being made.
      await this.listenAll(client);
      if (reconnect) for (const wakes of this.channels.values()) wakes.forEach((wake) => wake());
      this.options.onListening?.(reconnect);
    } catch (err) {
      if (this.closed) return;
      this.logger.warn(
        { err },
        `The LISTEN connection of ${this.purpose} could not be made; retrying in ${LISTEN_RETRY_MS / 1000} s (${this.fallback})`,
      );
      await client.end().catch(() => undefined);
      this.scheduleRetry();
    } finally {
      this.connecting = false;
    }
  }

  private get purpose(): string {
    return this.options.purpose ?? 'the background jobs';
  }

  private get fallback(): string {
    return this.options.fallback ?? 'polling continues';
  }

  private async listenAll(client: Client): Promise<void> {
    for (const channel of this.channels.keys()) {
      if (this.listening.has(channel)) continue;
      this.listening.add(channel);
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    }
  }

  private scheduleRetry(): void {
    if (this.closed || this.retry) return;
    this.retry = setTimeout(() => void this.connect(true), LISTEN_RETRY_MS);
    this.retry.unref();
  }
}
