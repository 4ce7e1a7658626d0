import { Logger } from '@nestjs/common';
import { randomBytes } from 'crypto';
import { Client } from 'pg';
import type { MetricsService } from '../metrics/metrics.service';
import { listenMetrics } from './listen-metrics';

/** Backoff of the attempts to make the LISTEN connection again: the first at once, then 1 s doubling up to 30 s, with jitter. */
export const LISTEN_RETRY_MIN_MS = 1000;
export const LISTEN_RETRY_MAX_MS = 30_000;
/** How often the LISTEN connection notifies itself, and how long the notification may take before the connection is declared dead. */
export const LISTEN_PROBE_EVERY_MS = 15_000;
export const LISTEN_PROBE_TIMEOUT_MS = 5_000;
/** TCP keepalive on the LISTEN connection (and the pools: data-source-options.ts): idle this long before the first probe. */
export const TCP_KEEPALIVE_INITIAL_DELAY_MS = 10_000;
/** How long making the connection may take. */
export const LISTEN_CONNECT_TIMEOUT_MS = 10_000;
export const LISTENER_APPLICATION_NAME = 'cluster-management-service-listener';

type LogSink = Pick<Logger, 'log' | 'warn' | 'debug'>;

export interface NotifyListenerOptions {
  /** `application_name` of the connection (pg_stat_activity), so each listener can be told apart. */
  applicationName?: string;
  /** Names the listener in its log lines (and the `listener` label of its metrics). */
  purpose?: string;
  /** What still holds while the connection is down, for the log lines. */
  fallback?: string;
  /** Called each time the LISTEN connection is (again) listening on every channel: notifications sent before are not seen. */
  onListening?: (reconnect: boolean) => void;
  /** Called when an established LISTEN connection is lost. */
  onLost?: () => void;
  /** Where `cms_listen_up` and `cms_listen_last_outage_seconds` are exported. */
  metrics?: MetricsService;
  /** Timings (tests shorten them). */
  probeEveryMs?: number;
  probeTimeoutMs?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  connectTimeoutMs?: number;
  logger?: LogSink;
}

/**
 * One PostgreSQL connection per replica and purpose that LISTENs on channels and wakes their subscribers on a
 * NOTIFY. Outside the pool: a LISTEN holds its session.
 *
 * A connection that never runs a statement would not notice a network partition that sends no reset, so it
 * notices three ways: TCP keepalive; every LISTEN_PROBE_EVERY_MS it NOTIFYs a channel of its own and declares
 * itself dead when that notification has not come back within LISTEN_PROBE_TIMEOUT_MS; and the connection's own
 * errors. A lost connection is made again at once, then after a backoff with jitter (1 s doubling up to 30 s), and
 * then wakes every subscriber once, since notifications sent meanwhile are gone; the loss and the recovery are one
 * log line each (attempts in between log at debug level).
 */
export class NotifyListener {
  private readonly logger: LogSink;
  private readonly channels = new Map<string, ((payload?: string) => void)[]>();
  private client: Client | null = null;
  /** Channels LISTENed on by `client`. */
  private listening = new Set<string>();
  private connecting = false;
  /** The connection being made (until it listens or fails), so that `close` can end it too. */
  private pending: Client | null = null;
  private retry: NodeJS.Timeout | null = null;
  private closed = false;
  /** Failed attempts since the connection was last listening. */
  private attempts = 0;
  /** When the connection was lost (or first tried), until it listens again. */
  private downSince: number | null = null;
  private everListened = false;
  private readonly probeChannel = `cms_listen_probe_${randomBytes(6).toString('hex')}`;
  private probeTimer: NodeJS.Timeout | null = null;
  private probeDeadline: NodeJS.Timeout | null = null;
  private probeNonce: string | null = null;

  constructor(
    private readonly url: string | undefined,
    private readonly options: NotifyListenerOptions = {},
  ) {
    this.logger = options.logger ?? new Logger('BackgroundJobs');
    if (options.metrics) listenMetrics(options.metrics).up.set({ listener: this.purpose }, 0);
  }

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

  /** Whether the connection is listening now. */
  get isListening(): boolean {
    return this.client !== null;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    this.stopProbe();
    const client = this.client;
    this.client = null;
    // A connection still being made is ended as well: otherwise it would outlive the close (its backend stays until
    // the connect finishes and notices the close), e.g. when a start-up fails right after the listener began.
    const pending = this.pending === client ? null : this.pending;
    this.pending = null;
    await Promise.all([client?.end().catch(() => undefined), pending?.end().catch(() => undefined)]);
  }

  private async connect(reconnect: boolean): Promise<void> {
    this.retry = null;
    if (this.closed) return;
    this.connecting = true;
    this.downSince ??= Date.now();
    const client = new Client({
      connectionString: this.url,
      application_name: this.options.applicationName ?? LISTENER_APPLICATION_NAME,
      keepAlive: true,
      keepAliveInitialDelayMillis: TCP_KEEPALIVE_INITIAL_DELAY_MS,
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? LISTEN_CONNECT_TIMEOUT_MS,
    });
    client.on('notification', (n) => {
      if (n.channel === this.probeChannel) {
        if (n.payload === this.probeNonce) this.probeAnswered();
        return;
      }
      this.channels.get(n.channel)?.forEach((wake) => wake(n.payload ?? ''));
    });
    // Errors end the connection; 'end' reports the loss once (`lost`).
    client.on('error', (err) => this.lost(client, err.message));
    client.on('end', () => this.lost(client, 'the connection ended'));
    this.pending = client;
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
      this.listeningAgain();
      this.startProbe(client);
      if (reconnect) for (const wakes of this.channels.values()) wakes.forEach((wake) => wake());
      this.options.onListening?.(reconnect);
    } catch (err) {
      if (this.closed) return;
      this.attempts++;
      const message = `The LISTEN connection of ${this.purpose} could not be made; trying again with backoff (${this.fallback})`;
      // Said once: when it could never be made at start. After a loss, the loss line said it already.
      if (!this.everListened && this.attempts === 1) this.logger.warn({ err: (err as Error).message }, message);
      else this.logger.debug?.({ err: (err as Error).message, attempts: this.attempts }, message);
      this.destroy(client);
      this.scheduleRetry();
    } finally {
      this.connecting = false;
      if (this.pending === client) this.pending = null;
    }
  }

  private listeningAgain(): void {
    const outageMs = this.downSince === null ? 0 : Date.now() - this.downSince;
    if (this.everListened)
      this.logger.log({ event: 'listen_recovered', outageMs }, `The LISTEN connection of ${this.purpose} is back after ${(outageMs / 1000).toFixed(1)} s`);
    if (this.options.metrics) {
      const m = listenMetrics(this.options.metrics);
      m.up.set({ listener: this.purpose }, 1);
      if (this.everListened) m.lastOutage.set({ listener: this.purpose }, outageMs / 1000);
    }
    this.everListened = true;
    this.attempts = 0;
    this.downSince = null;
  }

  /** The established connection `client` is gone: one line, then the first attempt at once. */
  private lost(client: Client, reason: string): void {
    if (this.client !== client || this.closed) return;
    this.client = null;
    this.stopProbe();
    this.destroy(client);
    this.downSince = Date.now();
    if (this.options.metrics) listenMetrics(this.options.metrics).up.set({ listener: this.purpose }, 0);
    this.logger.warn({ event: 'listen_lost', reason }, `The LISTEN connection of ${this.purpose} was lost (${reason}); reconnecting (${this.fallback})`);
    this.options.onLost?.();
    this.scheduleRetry();
  }

  private startProbe(client: Client): void {
    const every = this.options.probeEveryMs ?? LISTEN_PROBE_EVERY_MS;
    const timeout = this.options.probeTimeoutMs ?? LISTEN_PROBE_TIMEOUT_MS;
    this.stopProbe();
    this.probeTimer = setInterval(() => {
      if (this.client !== client || this.probeNonce) return;
      const nonce = randomBytes(8).toString('hex');
      this.probeNonce = nonce;
      this.probeDeadline = setTimeout(
        () => this.lost(client, `its own NOTIFY did not come back within ${timeout} ms`),
        timeout,
      );
      this.probeDeadline.unref();
      client.query(`NOTIFY ${client.escapeIdentifier(this.probeChannel)}, '${nonce}'`).catch((err: Error) => this.lost(client, err.message));
    }, every);
    this.probeTimer.unref();
  }

  private probeAnswered(): void {
    this.probeNonce = null;
    if (this.probeDeadline) clearTimeout(this.probeDeadline);
    this.probeDeadline = null;
  }

  private stopProbe(): void {
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = null;
    this.probeAnswered();
  }

  /** Closes the socket without waiting for the server: a partitioned server would never answer a Terminate. */
  private destroy(client: Client): void {
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  }

  private get purpose(): string {
    return this.options.purpose ?? 'the background jobs';
  }

  private get fallback(): string {
    return this.options.fallback ?? 'polling continues';
  }

  private async listenAll(client: Client): Promise<void> {
    for (const channel of [this.probeChannel, ...this.channels.keys()]) {
      if (this.listening.has(channel)) continue;
      this.listening.add(channel);
      await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
    }
  }

  /** The first attempt after a loss at once, then 1 s, 2 s, 4 s ... up to 30 s, each between half and all of it. */
  private scheduleRetry(): void {
    if (this.closed || this.retry) return;
    const min = this.options.retryMinMs ?? LISTEN_RETRY_MIN_MS;
    const max = this.options.retryMaxMs ?? LISTEN_RETRY_MAX_MS;
    const delay = this.attempts === 0 ? 0 : Math.min(max, min * 2 ** (this.attempts - 1)) * (0.5 + Math.random() / 2);
    this.retry = setTimeout(() => void this.connect(true), delay);
    this.retry.unref();
  }
}
