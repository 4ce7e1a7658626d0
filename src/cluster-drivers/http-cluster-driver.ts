import { randomUUID } from 'crypto';
import { Webhook } from 'standardwebhooks';
import { DriverCallError, parseDriverError } from './driver-call-error';
import {
  DRIVER_PROTOCOL_VERSION,
  OBSERVED_STATES,
  type ApplyRequest,
  type ClusterDriver,
  type ClusterObservation,
  type DeleteRequest,
  type DriverCapabilities,
  type ObserveManyRequest,
  type ObserveRequest,
} from './driver-contract';

export const DRIVER_CALL_OPERATIONS = ['capabilities', 'apply', 'delete', 'observe', 'observe-many'] as const;
export type DriverCallOperation = (typeof DRIVER_CALL_OPERATIONS)[number];
/** How a call ended: `ok`; the driver's own or the service's error class; `timeout`; `backoff` (not sent: held back). */
export type DriverCallOutcome = 'ok' | 'retryable' | 'terminal' | 'timeout' | 'backoff';

/** Told about every call (metrics). Never given a request or an answer. */
export interface DriverCallObserver {
  finished(driver: string, operation: DriverCallOperation, outcome: DriverCallOutcome, seconds: number): void;
}

export interface HttpDriverSettings {
  /** The registered name (metrics, messages). */
  name: string;
  /** Base URL; the protocol's paths are appended (`{url}/v1/apply`). */
  url: string;
  /** The Standard Webhooks signing secret (`whsec_` + base64). */
  secret: string;
  /** A call (waiting for a slot included) is given up after this and counts as retryable. */
  timeoutMs: number;
  /** At most this many calls to the driver at once; more wait for a slot. */
  maxInFlight: number;
  /** After a failed call, calls are held back for backoffBaseMs x 2^(failures-1), at most backoffMaxMs. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Clusters per `observe-many` request; larger batches are split. */
  observeBatchSize: number;
  /** Largest answer read, in bytes. */
  maxResponseBytes: number;
}

export const HTTP_DRIVER_DEFAULTS: Omit<HttpDriverSettings, 'name' | 'url' | 'secret'> = {
  timeoutMs: 15_000,
  maxInFlight: 16,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  observeBatchSize: 200,
  maxResponseBytes: 16 * 1024 * 1024,
};

/** Thrown inside a call when its time is up (turned into a retryable DriverTimeout). */
class CallTimedOut extends Error {}

/**
 * A cluster driver out of process, over the versioned JSON protocol (docs/driver-protocol.openapi.json,
 * docs/drivers.md): `POST /v1/apply`, `/v1/delete`, `/v1/observe`, `/v1/observe-many`, `GET /v1/capabilities`,
 * bodies the contract's types. Every request is signed as the service signs webhook deliveries (Standard Webhooks:
 * HMAC-SHA256 over `webhook-id.webhook-timestamp.body`; the driver checks the signature and the replay window).
 *
 * Failures are DriverCallErrors: a lost connection, a 5xx/429/408 or an answer that is not the protocol's is
 * retryable, a call over `timeoutMs` is a retryable DriverTimeout, a non-2xx answer with a DriverError body passes
 * the driver's error through. After a failure calls are held back (exponential backoff, DriverBackingOff) so that a
 * driver in trouble is not hammered; the first success ends it. At most `maxInFlight` calls run at once.
 * Credentials travel only in request bodies, which are never logged, kept or put in an error.
 */
export class HttpClusterDriver implements ClusterDriver {
  readonly name: string;
  private readonly base: string;
  private readonly signer: Webhook;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private failures = 0;
  private heldBackUntil = 0;

  /** The settings without the secret (kept only inside the signer). */
  private readonly settings: Omit<HttpDriverSettings, 'secret'>;

  constructor(
    settings: HttpDriverSettings,
    private readonly observer: DriverCallObserver | null = null,
    /** Milliseconds now (the backoff's clock); real time by default, since it paces network calls. */
    private readonly now: () => number = Date.now,
  ) {
    const { secret: _secret, ...rest } = settings;
    this.settings = rest;
    this.name = settings.name;
    this.base = settings.url.replace(/\/+$/, '');
    this.signer = new Webhook(settings.secret);
  }

  /** Calls running now (the in-flight gauge). */
  get callsInFlight(): number {
    return this.inFlight;
  }

  capabilities(): Promise<DriverCapabilities> {
    return this.call('capabilities', 'GET', null, (body) => {
      const c = body as DriverCapabilities;
      if (!c || typeof c !== 'object' || typeof c.protocolVersion !== 'string' || !Array.isArray(c.features) || !Array.isArray(c.cloudProviders) || !c.driver || typeof c.driver.name !== 'string') {
        return null;
      }
      if (c.protocolVersion !== DRIVER_PROTOCOL_VERSION) {
        throw DriverCallError.terminal('UnsupportedProtocolVersion', `The cluster driver '${this.name}' speaks protocol ${String(c.protocolVersion).slice(0, 20)}, not ${DRIVER_PROTOCOL_VERSION}`);
      }
      return c;
    });
  }

  apply(request: ApplyRequest): Promise<ClusterObservation> {
    return this.call('apply', 'POST', request, asObservation);
  }

  delete(request: DeleteRequest): Promise<ClusterObservation> {
    return this.call('delete', 'POST', request, asObservation);
  }

  observe(request: ObserveRequest): Promise<ClusterObservation> {
    return this.call('observe', 'POST', request, asObservation);
  }

  async observeMany(requests: ObserveRequest[]): Promise<Map<string, ClusterObservation>> {
    const batches: ObserveRequest[][] = [];
    for (let i = 0; i < requests.length; i += this.settings.observeBatchSize) batches.push(requests.slice(i, i + this.settings.observeBatchSize));
    const answers = await Promise.all(
      batches.map((clusters) => {
        const body: ObserveManyRequest = { clusters };
        return this.call('observe-many', 'POST', body, (answer) => {
          const observations = (answer as { observations?: unknown })?.observations;
          if (!observations || typeof observations !== 'object' || Array.isArray(observations)) return null;
          const asked = new Set(clusters.map((c) => c.cluster.identity));
          const out = new Map<string, ClusterObservation>();
          for (const [identity, value] of Object.entries(observations as Record<string, unknown>)) {
            const observation = asObservation(value);
            if (!observation) return null;
            if (asked.has(identity)) out.set(identity, observation);
          }
          return out;
        });
      }),
    );
    const all = new Map<string, ClusterObservation>();
    for (const answer of answers) for (const [k, v] of answer) all.set(k, v);
    return all;
  }

  private async call<T>(operation: DriverCallOperation, method: 'GET' | 'POST', body: unknown, parse: (body: unknown) => T | null): Promise<T> {
    const startedAt = performance.now();
    const seconds = () => (performance.now() - startedAt) / 1000;
    if (this.now() < this.heldBackUntil) {
      this.observer?.finished(this.name, operation, 'backoff', 0);
      const waitS = Math.ceil((this.heldBackUntil - this.now()) / 1000);
      throw DriverCallError.retryable('DriverBackingOff', `The cluster driver '${this.name}' failed recently; calls resume in ${waitS} s`);
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new CallTimedOut()), this.settings.timeoutMs);
    let slot = false;
    try {
      await this.acquire(controller.signal);
      slot = true;
      const result = await this.exchange(operation, method, body, parse, controller.signal);
      this.failures = 0;
      this.heldBackUntil = 0;
      this.observer?.finished(this.name, operation, 'ok', seconds());
      return result;
    } catch (e) {
      const error =
        controller.signal.aborted && controller.signal.reason instanceof CallTimedOut
          ? DriverCallError.retryable('DriverTimeout', `The cluster driver '${this.name}' did not answer ${operation} within ${this.settings.timeoutMs} ms`)
          : e instanceof DriverCallError
            ? e
            : DriverCallError.retryable('DriverUnreachable', `The cluster driver '${this.name}' could not be reached (${networkReason(e)})`);
      const outcome: DriverCallOutcome = error.driverError.code === 'DriverTimeout' ? 'timeout' : error.driverError.class;
      if (error.driverError.class === 'retryable') this.holdBack(error);
      this.observer?.finished(this.name, operation, outcome, seconds());
      throw error;
    } finally {
      clearTimeout(timer);
      if (slot) this.release();
    }
  }

  private async exchange<T>(operation: DriverCallOperation, method: 'GET' | 'POST', body: unknown, parse: (body: unknown) => T | null, signal: AbortSignal): Promise<T> {
    const payload = body === null ? '' : JSON.stringify(body);
    const id = `msg_${randomUUID()}`;
    const timestamp = new Date();
    const headers: Record<string, string> = {
      accept: 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': this.signer.sign(id, timestamp, payload),
    };
    if (method === 'POST') headers['content-type'] = 'application/json';
    const res = await fetch(`${this.base}/${DRIVER_PROTOCOL_VERSION}/${operation}`, { method, headers, body: method === 'POST' ? payload : undefined, signal, redirect: 'manual' });
    const text = await readBounded(res, this.settings.maxResponseBytes);
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (res.status >= 200 && res.status < 300) {
      const parsed = json === undefined ? null : parse(json);
      if (parsed === null) throw DriverCallError.retryable('DriverProtocolError', `The cluster driver '${this.name}' answered ${operation} with a body that is not the protocol's`);
      return parsed;
    }
    const own = parseDriverError((json as { error?: unknown } | undefined)?.error);
    if (own) throw new DriverCallError(own);
    const retryAfter = Number(res.headers.get('retry-after'));
    if (res.status >= 500 || res.status === 429 || res.status === 408) {
      const error = DriverCallError.retryable('DriverUnavailable', `The cluster driver '${this.name}' answered HTTP ${res.status}`);
      if (Number.isFinite(retryAfter) && retryAfter > 0) this.heldBackUntil = Math.max(this.heldBackUntil, this.now() + Math.min(retryAfter * 1000, this.settings.backoffMaxMs));
      throw error;
    }
    if (res.status < 400) {
      throw DriverCallError.retryable('DriverProtocolError', `The cluster driver '${this.name}' answered ${operation} with HTTP ${res.status} (redirects are not followed: register the final URL)`);
    }
    if (res.status === 401 || res.status === 403) {
      throw DriverCallError.retryable('DriverAuthenticationFailed', `The cluster driver '${this.name}' refused the request's signature (HTTP ${res.status}): its signing secret differs from the registered one`);
    }
    throw DriverCallError.terminal('DriverRejectedRequest', `The cluster driver '${this.name}' refused ${operation} with HTTP ${res.status}`);
  }

  private holdBack(error: DriverCallError): void {
    if (error.driverError.code === 'DriverBackingOff') return;
    this.failures++;
    const delay = Math.min(this.settings.backoffBaseMs * 2 ** Math.min(this.failures - 1, 30), this.settings.backoffMaxMs);
    this.heldBackUntil = Math.max(this.heldBackUntil, this.now() + delay);
  }

  private acquire(signal: AbortSignal): Promise<void> {
    if (this.inFlight < this.settings.maxInFlight) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener('abort', onAbort);
        this.inFlight++;
        resolve();
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(grant);
    });
  }

  private release(): void {
    this.inFlight--;
    this.waiting.shift()?.();
  }
}

/** The answer's text, refusing more than `max` bytes. */
async function readBounded(res: Response, max: number): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      throw DriverCallError.retryable('DriverProtocolError', `The cluster driver's answer exceeds ${max} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A network error's code (ECONNREFUSED, ...) without the request. */
function networkReason(e: unknown): string {
  const cause = (e as { cause?: { code?: unknown } })?.cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  const code = (e as { code?: unknown })?.code;
  return typeof code === 'string' ? code : 'network error';
}

const isStringOrNull = (v: unknown) => v === null || typeof v === 'string';
const isNumberOrNull = (v: unknown) => v === null || (typeof v === 'number' && Number.isFinite(v));

/** A ClusterObservation as the protocol describes it, or null. */
export function asObservation(value: unknown): ClusterObservation | null {
  if (!value || typeof value !== 'object') return null;
  const o = value as Record<string, unknown>;
  if (typeof o.exists !== 'boolean' || !(OBSERVED_STATES as readonly unknown[]).includes(o.state)) return null;
  if (!isNumberOrNull(o.observedGeneration) || !isStringOrNull(o.version) || !isNumberOrNull(o.retryAfterSeconds ?? null)) return null;
  if (!Array.isArray(o.nodePools) || !Array.isArray(o.addons) || !Array.isArray(o.conditions)) return null;
  for (const p of o.nodePools as Record<string, unknown>[]) {
    if (!p || typeof p.identity !== 'string' || typeof p.desiredNodes !== 'number' || typeof p.readyNodes !== 'number' || typeof p.ready !== 'boolean') return null;
  }
  const cp = o.controlPlane as Record<string, unknown> | null | undefined;
  if (cp != null && (typeof cp !== 'object' || typeof cp.ready !== 'boolean' || !isStringOrNull(cp.endpoint ?? null) || !isStringOrNull(cp.caCertificate ?? null))) return null;
  let error = null;
  if (o.error != null) {
    error = parseDriverError(o.error);
    if (!error) return null;
  }
  return { ...(o as unknown as ClusterObservation), controlPlane: (cp ?? null) as ClusterObservation['controlPlane'], error, retryAfterSeconds: (o.retryAfterSeconds as number | null) ?? null };
}
