import type { Fixture } from './service';
import { sleep } from './processes';

/**
 * The load the faults happen under: three writers and two readers, each paced at `perWorkerRate` requests per second
 * (one request at a time, so a slow answer lowers its rate rather than piling up), bounded in count and time.
 * Every request is recorded; an acknowledged write (2xx) with the value it wrote, so that it can be read back later.
 */

export type Outcome = number | 'timeout' | 'network';

export interface RequestRecord {
  worker: string;
  kind: 'write' | 'read';
  method: string;
  start: number;
  end: number;
  status: Outcome;
  /** The answer carried a Retry-After header. */
  retryAfter: boolean;
  /** A write's value: the new environment's name, or the cluster's new description. */
  value?: string;
  /** What a write changed: `environments`, or the cluster's slug. */
  target?: string;
  /** The start of an error answer's body (its code and message), for the report's breakdown of 5xx answers. */
  detail?: string;
}

export interface LoadOptions {
  perWorkerRate: number;
  maxRequests: number;
  maxSeconds: number;
  timeoutMs: number;
}

interface Worker {
  name: string;
  kind: 'write' | 'read';
  next: (seq: number) => { method: string; path: string; body?: unknown; value?: string; target?: string };
}

export class Load {
  readonly records: RequestRecord[] = [];
  private stopped = false;
  private running: Promise<void>[] = [];
  private readonly workers: Worker[];

  constructor(
    private readonly base: string,
    private readonly token: string,
    fixture: Fixture,
    private readonly options: LoadOptions,
  ) {
    const { org, env, writerClusters } = fixture;
    const run = Date.now().toString(36).slice(-4);
    this.workers = [
      {
        name: 'writer-environments',
        kind: 'write',
        next: (seq) => {
          const name = `w${run}-${seq}`;
          return { method: 'POST', path: `/api/v1/orgs/${org}/environments`, body: { name }, value: name, target: 'environments' };
        },
      },
      ...writerClusters.map(
        (cluster, i): Worker => ({
          name: `writer-cluster-${i + 1}`,
          kind: 'write',
          next: (seq) => {
            const description = `w${i + 1}-${run}-${seq}`;
            return {
              method: 'PATCH',
              path: `/api/v1/orgs/${org}/clusters/${env}/${cluster}`,
              body: { description },
              value: description,
              target: cluster,
            };
          },
        }),
      ),
      { name: 'reader-environments', kind: 'read', next: () => ({ method: 'GET', path: `/api/v1/orgs/${org}/environments?size=20` }) },
      { name: 'reader-cluster', kind: 'read', next: () => ({ method: 'GET', path: `/api/v1/orgs/${org}/clusters/${env}/${writerClusters[0]}` }) },
    ];
  }

  get workerCount(): number {
    return this.workers.length;
  }

  start(): void {
    const startedAt = Date.now();
    this.running = this.workers.map((w) => this.loop(w, startedAt));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }

  private async loop(worker: Worker, startedAt: number): Promise<void> {
    const interval = 1000 / this.options.perWorkerRate;
    let due = startedAt;
    for (let seq = 1; ; seq++) {
      if (this.stopped || this.records.length >= this.options.maxRequests || Date.now() - startedAt > this.options.maxSeconds * 1000) return;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      due = Math.max(due + interval, Date.now());
      this.records.push(await this.send(worker, seq));
    }
  }

  private async send(worker: Worker, seq: number): Promise<RequestRecord> {
    const req = worker.next(seq);
    const start = Date.now();
    const base = { worker: worker.name, kind: worker.kind, method: req.method, start, value: req.value, target: req.target };
    try {
      const res = await fetch(`${this.base}${req.path}`, {
        method: req.method,
        headers: { authorization: `Token ${this.token}`, ...(req.body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      const text = await res.text();
      return {
        ...base,
        end: Date.now(),
        status: res.status,
        retryAfter: res.headers.has('retry-after'),
        ...(res.ok ? {} : { detail: errorDetail(text) }),
      };
    } catch (e) {
      const timeout = (e as Error).name === 'TimeoutError' || (e as Error).name === 'AbortError';
      return { ...base, end: Date.now(), status: timeout ? 'timeout' : 'network', retryAfter: false, detail: String((e as Error & { cause?: Error }).cause?.message ?? (e as Error).message).slice(0, 120) };
    }
  }
}

/** An error body's code and message, shortened. */
function errorDetail(text: string): string {
  try {
    const j = JSON.parse(text) as { code?: unknown; error?: unknown; message?: unknown; detail?: unknown };
    return [j.code ?? j.error, j.message ?? j.detail].filter((v) => v !== undefined).map(String).join(': ').slice(0, 160);
  } catch {
    return text.slice(0, 160);
  }
}
