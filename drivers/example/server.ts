import * as http from 'http';
import type { AddressInfo } from 'net';
import { Webhook } from 'standardwebhooks';
import type {
  ApplyRequest,
  ClusterObservation,
  DeleteRequest,
  DriverCapabilities,
  DriverError,
  DriverErrorResponse,
  ObserveManyRequest,
  ObserveManyResponse,
  ObserveRequest,
} from '../../src/cluster-drivers/driver-contract';
import { ExampleCloud, type CloudOptions, type CloudState } from './example-cloud';
import { readState, writeTextAtomically } from './state-file';

/**
 * The example cluster driver: the protocol v1 (docs/driver-protocol.openapi.json) over Node's http server, in front of
 * ExampleCloud. Every request must be signed with the shared secret (Standard Webhooks), within the 5-minute replay
 * window, with a `webhook-id` not seen in that window (401 otherwise). State is written atomically to the state file
 * after every change and read at start, so a restart loses nothing.
 *
 * Fault injection (feature `faultInjection`, for tests): the header `x-driver-fault: retryable | terminal | timeout |
 * unavailable` makes that one call fail as named (`timeout`: answered after `faultDelayMs`); `POST /control/faults`
 * (signed) with `{operation, fault, times}` makes the next `times` calls of `operation` (or of any, `*`) fail.
 * A node type named `invalid…` is refused as a terminal `InvalidNodeType`, like a real cloud's unknown machine type.
 */

export interface ExampleDriverOptions extends CloudOptions {
  port: number;
  host?: string;
  secret: string;
  stateFile: string;
  /** Milliseconds per unit of work (a node, a control plane step). */
  stepMs?: number;
  /** How long an injected `timeout` fault keeps the call waiting. */
  faultDelayMs?: number;
  /** Every call is answered this many milliseconds late (a remote cloud API's latency). */
  latencyMs?: number;
}

const FAULTS = ['retryable', 'terminal', 'timeout', 'unavailable'] as const;
type Fault = (typeof FAULTS)[number];
const OPERATIONS = ['capabilities', 'apply', 'delete', 'observe', 'observe-many'];
const REPLAY_WINDOW_MS = 5 * 60 * 1000;
const TICK_WRITE_MS = 1000;
const MAX_BODY = 16 * 1024 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`HTTP ${status}`);
  }
}

export class ExampleDriverServer {
  private readonly server: http.Server;
  private readonly verifier: Webhook;
  private readonly cloud: ExampleCloud;
  private readonly seenIds = new Map<string, number>();
  private readonly plannedFaults: { operation: string; fault: Fault; times: number }[] = [];
  private timer: NodeJS.Timeout | null = null;
  private dirty = false;
  /** The write of the state under way: changes made meanwhile wait for the next one (group commit). */
  private writing: Promise<void> | null = null;
  private lastWrite = 0;

  constructor(private readonly options: ExampleDriverOptions) {
    this.verifier = new Webhook(options.secret);
    this.cloud = new ExampleCloud(readState<CloudState>(options.stateFile) ?? ExampleCloud.empty(), options);
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 65_000;
  }

  async start(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.options.host ?? '127.0.0.1', () => resolve());
    });
    this.timer = setInterval(() => this.tick(), this.options.stepMs ?? 1000);
    return (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.flush();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private tick(): void {
    if (this.cloud.tick()) this.dirty = true;
    // The cloud's own progress is written at most once a second (a crash repeats at most a second of it); a change a
    // call asked for is written before the call is answered.
    const now = Date.now();
    if (this.dirty && !this.writing && now - this.lastWrite >= TICK_WRITE_MS) void this.flush();
    for (const [id, at] of this.seenIds) if (now - at > REPLAY_WINDOW_MS * 2) this.seenIds.delete(id);
  }


  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    try {
      const body = await readBody(req);
      this.verify(req, body);
      const url = new URL(req.url ?? '/', 'http://driver');
      if (req.method === 'POST' && url.pathname === '/control/faults') return send(res, 200, this.planFault(parse(body)));
      const match = /^\/v1\/([a-z-]+)$/.exec(url.pathname);
      const operation = match?.[1] ?? '';
      if (!OPERATIONS.includes(operation)) throw new HttpError(404, { message: `No operation ${req.method} ${url.pathname}` });
      if ((operation === 'capabilities') !== (req.method === 'GET')) throw new HttpError(405, { message: `${req.method} is not allowed on ${url.pathname}` });
      await this.injectedFault(operation, req.headers['x-driver-fault']);
      let answer: unknown;
      let failure: unknown = null;
      try {
        answer = this.operate(operation, body);
      } catch (e) {
        failure = e;
      }
      // A change is on disk before it is answered (a kill -9 after the answer loses nothing).
      if (this.dirty || this.writing) await this.flush();
      if (this.options.latencyMs) await new Promise((r) => setTimeout(r, this.options.latencyMs));
      if (failure) throw failure;
      send(res, 200, answer);
    } catch (e) {
      if (e instanceof HttpError) return send(res, e.status, e.body);
      send(res, 500, driverError('retryable', 'InternalError', 'The example driver failed unexpectedly'));
    }
  }

  /** Standard Webhooks signature, replay window, and no `webhook-id` twice. Nothing is done for a request that fails. */
  private verify(req: http.IncomingMessage, body: string): void {
    try {
      this.verifier.verify(body, req.headers as Record<string, string>);
    } catch (e) {
      throw new HttpError(401, { message: `Signature refused: ${(e as Error).message}` });
    }
    const id = String(req.headers['webhook-id']);
    if (this.seenIds.has(id)) throw new HttpError(401, { message: 'Signature refused: this webhook-id was seen (a replay)' });
    this.seenIds.set(id, Date.now());
  }

  private operate(operation: string, body: string): unknown {
    switch (operation) {
      case 'capabilities': {
        const answer: DriverCapabilities = {
          protocolVersion: 'v1',
          driver: { name: 'example-driver', version: '1.0.0' },
          cloudProviders: ['*'],
          features: ['stopStart', 'upgrade', 'nodePoolScaling', 'addons', 'faultInjection'],
        };
        return answer;
      }
      case 'apply': {
        const req = parse(body) as ApplyRequest;
        requireCluster(req);
        const { observation, error, changed } = this.cloud.apply(req);
        if (changed) this.markChanged();
        if (error) throw new HttpError(422, { error } satisfies DriverErrorResponse);
        return observation;
      }
      case 'delete': {
        const req = parse(body) as DeleteRequest;
        requireCluster(req);
        const { observation, changed } = this.cloud.delete(req);
        if (changed) this.markChanged();
        return observation;
      }
      case 'observe': {
        const req = parse(body) as ObserveRequest;
        requireCluster(req);
        return this.cloud.observe(req.cluster.identity);
      }
      default: {
        const req = parse(body) as ObserveManyRequest;
        if (!Array.isArray(req?.clusters)) throw new HttpError(400, { message: 'clusters must be an array' });
        const observations: Record<string, ClusterObservation> = {};
        for (const c of req.clusters) {
          requireCluster(c);
          observations[c.cluster.identity] = this.cloud.observe(c.cluster.identity);
        }
        return { observations } satisfies ObserveManyResponse;
      }
    }
  }

  private markChanged(): void {
    this.dirty = true;
  }

  /**
   * Resolves once every change made so far is on disk. One write (serialised at once, written without blocking the
   * event loop: temporary file, fsync, rename) serves every change made before it started (group commit).
   */
  private async flush(): Promise<void> {
    while (this.dirty || this.writing) {
      if (this.writing) {
        await this.writing;
        continue;
      }
      this.dirty = false;
      this.lastWrite = Date.now();
      const text = JSON.stringify(this.cloud.snapshot);
      this.writing = writeTextAtomically(this.options.stateFile, text).finally(() => (this.writing = null));
      await this.writing;
    }
  }

  private planFault(body: unknown): unknown {
    const b = body as { operation?: unknown; fault?: unknown; times?: unknown };
    const operation = typeof b?.operation === 'string' ? b.operation : '*';
    if (operation !== '*' && !OPERATIONS.includes(operation)) throw new HttpError(400, { message: `operation must be one of *, ${OPERATIONS.join(', ')}` });
    if (!FAULTS.includes(b?.fault as Fault)) throw new HttpError(400, { message: `fault must be one of ${FAULTS.join(', ')}` });
    const times = typeof b.times === 'number' && b.times > 0 ? Math.min(Math.floor(b.times), 1000) : 1;
    this.plannedFaults.push({ operation, fault: b.fault as Fault, times });
    return { planned: this.plannedFaults };
  }

  private async injectedFault(operation: string, header: string | string[] | undefined): Promise<void> {
    let fault: Fault | null = FAULTS.includes(header as Fault) ? (header as Fault) : null;
    if (!fault) {
      const planned = this.plannedFaults.find((f) => f.operation === '*' || f.operation === operation);
      if (planned) {
        fault = planned.fault;
        if (--planned.times <= 0) this.plannedFaults.splice(this.plannedFaults.indexOf(planned), 1);
      }
    }
    switch (fault) {
      case 'retryable':
        throw new HttpError(503, driverError('retryable', 'Throttled', 'The example cloud asks to slow down (injected)'));
      case 'terminal':
        throw new HttpError(422, driverError('terminal', 'QuotaExceeded', 'The example account has no quota left for this (injected)'));
      case 'unavailable':
        throw new HttpError(503, { message: 'unavailable (injected)' });
      case 'timeout':
        await new Promise((r) => setTimeout(r, this.options.faultDelayMs ?? 10_000));
        throw new HttpError(503, driverError('retryable', 'Timeout', 'The example cloud answered too late (injected)'));
      default:
    }
  }
}

function driverError(cls: DriverError['class'], code: string, message: string): DriverErrorResponse {
  return { error: { class: cls, code, message } };
}

function requireCluster(req: { cluster?: { identity?: unknown; generation?: unknown } } | null): void {
  if (!req?.cluster || typeof req.cluster.identity !== 'string' || typeof req.cluster.generation !== 'number') {
    throw new HttpError(400, { message: 'cluster.identity and cluster.generation are required' });
  }
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new HttpError(400, { message: 'The body is not JSON' });
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new HttpError(413, { message: 'The body is too large' }));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
