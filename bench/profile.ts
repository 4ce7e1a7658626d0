import * as fs from 'fs';
import * as path from 'path';

/**
 * CPU profiles of a running server process for one operation at a time: the process is started with
 * `--inspect=127.0.0.1:<port>` and the bench drives V8's profiler over the DevTools protocol (the same profile
 * `--cpu-prof` writes, a `.cpuprofile`), so a profile covers exactly the requests of one operation and not the
 * process's start-up. `summariseProfile` turns it into per-request figures.
 */

interface CdpNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}
export interface CpuProfile {
  nodes: CdpNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export class InspectorSession {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener('message', (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string } };
      if (msg.id === undefined) return;
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(msg.error.message));
      else p.resolve(msg.result);
    });
  }

  /** Connects to the inspector a process opened with `--inspect=127.0.0.1:<port>`. */
  static async connect(port: number): Promise<InspectorSession> {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
    const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve(), { once: true });
      ws.addEventListener('error', () => reject(new Error(`inspector on port ${port}: connection failed`)), { once: true });
    });
    const session = new InspectorSession(ws);
    await session.send('Profiler.enable');
    return session;
  }

  send<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Profiles while `work` runs (sampling every `intervalUs` microseconds). */
  async profile(work: () => Promise<void>, intervalUs = 200): Promise<CpuProfile> {
    await this.send('Profiler.setSamplingInterval', { interval: intervalUs });
    await this.send('Profiler.start');
    let failure: unknown = null;
    try {
      await work();
    } catch (e) {
      failure = e;
    }
    // Stopped in every case, so the process is not left profiling.
    const { profile } = await this.send<{ profile: CpuProfile }>('Profiler.stop');
    if (failure) throw failure;
    return profile;
  }

  close(): void {
    this.ws.close();
  }
}

const ROOT = path.resolve(__dirname, '..') + '/';

/** A frame's place, shortened: `pg/lib/client.js`, `src/clusters/cluster-read.js` (built or not), `node:internal/...`. */
function where(url: string): string {
  if (!url) return '';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  if (nm >= 0) return u.slice(nm + '/node_modules/'.length);
  if (u.startsWith(ROOT)) return u.slice(ROOT.length).replace(/^dist\//, '');
  return u;
}

/** What a frame belongs to: an npm package, the project's code, Node.js itself, or V8 (GC, program). */
function owner(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const w = where(url);
  if (url.includes('/node_modules/')) {
    const parts = w.split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (w.startsWith('node:')) return 'node (core)';
  if (w.startsWith('src/') || w.startsWith('bench/')) return `project ${w.split('/').slice(0, 2).join('/')}`;
  return w;
}

export interface ProfileSummary {
  requests: number;
  sampledMs: number;
  /** Sampled time that was not idle: the event loop's (main thread's) CPU time. */
  busyMs: number;
  busyMsPerRequest: number;
  topFrames: { frame: string; where: string; selfMs: number; msPerRequest: number; percent: number }[];
  byOwner: { owner: string; selfMs: number; msPerRequest: number; percent: number }[];
}

export function summariseProfile(profile: CpuProfile, requests: number, top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let sampled = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000; // the delta after a sample is the time it stands for
    sampled += dt;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  const frames = new Map<string, { frame: string; where: string; ms: number }>();
  const owners = new Map<string, number>();
  let busy = 0;
  for (const [id, ms] of self) {
    const cf = byId.get(id)!.callFrame;
    if (cf.functionName === '(idle)') continue;
    busy += ms;
    const frame = cf.functionName || '(anonymous)';
    const w = cf.url ? `${where(cf.url)}:${cf.lineNumber + 1}` : '';
    const key = `${frame} ${w}`;
    const f = frames.get(key) ?? { frame, where: w, ms: 0 };
    f.ms += ms;
    frames.set(key, f);
    const o = owner(cf.url, frame);
    owners.set(o, (owners.get(o) ?? 0) + ms);
  }
  const pct = (ms: number) => +((100 * ms) / Math.max(busy, 1e-9)).toFixed(1);
  const per = (ms: number) => +(ms / requests).toFixed(4);
  return {
    requests,
    sampledMs: +sampled.toFixed(1),
    busyMs: +busy.toFixed(1),
    busyMsPerRequest: +(busy / requests).toFixed(3),
    topFrames: [...frames.values()]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top)
      .map((f) => ({ frame: f.frame, where: f.where, selfMs: +f.ms.toFixed(1), msPerRequest: per(f.ms), percent: pct(f.ms) })),
    byOwner: [...owners.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([o, ms]) => ({ owner: o, selfMs: +ms.toFixed(1), msPerRequest: per(ms), percent: pct(ms) })),
  };
}

export function writeProfile(dir: string, name: string, profile: CpuProfile): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.cpuprofile`);
  fs.writeFileSync(file, JSON.stringify(profile));
  return file;
}

/** A side's figures for one operation, as Markdown. */
export function profileMarkdown(title: string, s: ProfileSummary): string {
  const lines = [
    `### ${title}`,
    '',
    `${s.requests} requests; main thread busy ${s.busyMs} ms of ${s.sampledMs} ms sampled: **${s.busyMsPerRequest} ms per request**.`,
    '',
    '| owner | self ms/request | % of busy |',
    '|---|---:|---:|',
    ...s.byOwner.map((o) => `| ${o.owner} | ${o.msPerRequest} | ${o.percent} |`),
    '',
    '| top self-time frame | where | self ms/request | % of busy |',
    '|---|---|---:|---:|',
    ...s.topFrames.map((f) => `| \`${f.frame}\` | ${f.where} | ${f.msPerRequest} | ${f.percent} |`),
    '',
  ];
  return lines.join('\n');
}
