import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { Gauge } from 'prom-client';
import type { MetricsService } from './metrics/metrics.service';

/** While the database is unavailable, one summary line per this interval instead of a line per failed request. */
export const OUTAGE_SUMMARY_EVERY_MS = 10_000;

/** What the exception filter marks on a request answered 503 because the database cannot be used (src/common/errors.ts). */
interface MarkedRequest {
  databaseUnavailable?: boolean;
  databaseUnavailableCode?: string;
}

const gauges = new WeakMap<MetricsService, Gauge>();

/** `cms_database_last_outage_seconds`, once per app's registry. */
function lastOutageGauge(metrics: MetricsService): Gauge {
  let gauge = gauges.get(metrics);
  if (!gauge) {
    gauge = new Gauge({
      name: 'cms_database_last_outage_seconds',
      help: 'How long the last database outage seen by requests lasted: from the first 503 for an unavailable database to the next successful answer',
      registers: [metrics.registry],
    });
    gauges.set(metrics, gauge);
  }
  return gauge;
}

/**
 * The log of a database outage as requests see it: one error line when the first request finds the database
 * unavailable (with the cause's code), then, instead of one error line per failed request, one warn line per
 * OUTAGE_SUMMARY_EVERY_MS with how many requests answered 503 and their codes, and one info line when a request
 * succeeds again with the outage's length and total. A 40 s outage is about six lines, whatever the request rate.
 */
export class DatabaseOutageLog {
  private since: number | null = null;
  private interval = { requests: 0, codes: {} as Record<string, number> };
  private total = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly metrics?: MetricsService,
    private readonly everyMs = OUTAGE_SUMMARY_EVERY_MS,
  ) {}

  /** Whether the database is declared unavailable now. */
  get down(): boolean {
    return this.since !== null;
  }

  /** Sees every answer; true when the answer's own line is left out (it is counted in the summary instead). */
  observe(request: FastifyRequest, status: number): boolean {
    const marked = request.raw as MarkedRequest;
    if (marked.databaseUnavailable === true) {
      const code = marked.databaseUnavailableCode ?? 'unknown';
      if (this.since === null) this.start(code);
      this.interval.requests++;
      this.interval.codes[code] = (this.interval.codes[code] ?? 0) + 1;
      this.total++;
      return true;
    }
    if (this.since !== null && status < 500 && request.routeOptions?.url !== '/health') this.end();
    return false;
  }

  /** Stops the summary timer (at shutdown). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private start(code: string): void {
    this.since = Date.now();
    this.total = 0;
    this.log.error(
      { event: 'database_unavailable', code },
      `The database is unavailable (${code}); requests answer 503 with Retry-After until it returns, summarised every ${this.everyMs / 1000} s`,
    );
    this.timer = setInterval(() => this.summarise(), this.everyMs);
    this.timer.unref();
  }

  private summarise(): void {
    const { requests, codes } = this.interval;
    if (!requests) return;
    this.interval = { requests: 0, codes: {} };
    const seconds = Math.round((Date.now() - this.since!) / 100) / 10;
    this.log.warn(
      { event: 'database_unavailable_summary', requests, codes, outageSeconds: seconds },
      `The database is still unavailable after ${seconds} s: ${requests} requests answered 503 in the last ${this.everyMs / 1000} s`,
    );
  }

  private end(): void {
    this.close();
    const outageMs = Date.now() - this.since!;
    const { requests, codes } = this.interval;
    this.interval = { requests: 0, codes: {} };
    this.since = null;
    if (this.metrics) lastOutageGauge(this.metrics).set(outageMs / 1000);
    this.log.info(
      { event: 'database_available', outageSeconds: outageMs / 1000, requests: this.total, lastCodes: requests ? codes : undefined },
      `The database is available again after ${(outageMs / 1000).toFixed(1)} s; ${this.total} requests answered 503 meanwhile`,
    );
  }
}
