import { randomUUID } from 'crypto';
import { Webhook } from 'standardwebhooks';
import { DriverCallError } from '../../src/cluster-drivers/driver-call-error';
import type { ClusterObservation, DesiredClusterSpec, DriverCapabilities, DriverCloudAccount } from '../../src/cluster-drivers/driver-contract';
import { HTTP_DRIVER_DEFAULTS, HttpClusterDriver } from '../../src/cluster-drivers/http-cluster-driver';
import { applyRequest, cloudAccount, clusterSpec, deleteRequest, nextGeneration, nodePool, observeRequest } from './fixtures';

/**
 * The conformance kit of the cluster driver protocol v1 (docs/drivers.md, "Conformance"): the contract's scenarios run
 * in order against one driver, each passed, failed (with why) or skipped (an optional feature the driver does not
 * declare). Normal calls go through the service's own HTTP driver (HttpClusterDriver), so they are signed, timed and
 * classified exactly as the service does; the signature and fault scenarios send raw requests.
 */

export interface KitOptions {
  url: string;
  secret: string;
  /** The service's per-call timeout for this run. */
  timeoutMs?: number;
  /** How long a scenario waits for the driver to converge. */
  waitSeconds?: number;
  /** Pause between observations while waiting. */
  pollMs?: number;
}

export type Outcome = 'pass' | 'fail' | 'skip';
export interface ScenarioResult {
  name: string;
  outcome: Outcome;
  detail: string;
}

class Failed extends Error {}
class Skipped extends Error {}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Failed(message);
}

export const SCENARIOS = [
  'capabilities',
  'bad signature refused',
  'unknown cluster',
  'create',
  'add a pool',
  'resize a pool',
  'delete a pool',
  'toggle an add-on',
  'upgrade',
  'stop and start',
  'repeated call with one idempotency key',
  'reordered calls',
  'observe many',
  'terminal error',
  'retryable error',
  'timeout',
  'delete',
] as const;

export async function runConformance(options: KitOptions): Promise<ScenarioResult[]> {
  const base = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 5000;
  const waitMs = (options.waitSeconds ?? 120) * 1000;
  const pollMs = options.pollMs ?? 200;
  // No backoff between the kit's calls: a failure must not hold the next scenario back.
  const driver = new HttpClusterDriver({ ...HTTP_DRIVER_DEFAULTS, name: 'conformance', url: base, secret: options.secret, timeoutMs, backoffBaseMs: 0, backoffMaxMs: 0 });
  const account: DriverCloudAccount = cloudAccount(`conformance-${randomUUID()}`);
  let spec: DesiredClusterSpec = clusterSpec({ slug: `conformance-${randomUUID().slice(0, 8)}` });
  let capabilities: DriverCapabilities | null = null;
  const results: ScenarioResult[] = [];

  const observe = () => driver.observe(observeRequest(spec, account));
  /** Applies `next` (the new generation) and waits until the driver reports it in place and `done` holds. */
  const applyAndWait = async (next: DesiredClusterSpec, done: (o: ClusterObservation) => string | null, kind: 'create' | 'update' | 'start' | 'stop' | 'upgrade' = 'update') => {
    spec = next;
    await driver.apply(applyRequest(spec, account, kind));
    return waitFor(spec.generation, done);
  };
  const waitFor = async (generation: number, done: (o: ClusterObservation) => string | null): Promise<ClusterObservation> => {
    const deadline = Date.now() + waitMs;
    let last: ClusterObservation | null = null;
    let why = 'no observation';
    while (Date.now() < deadline) {
      last = await observe();
      check(!last.error || last.error.class !== 'terminal', `the driver reports a terminal error: ${last.error?.code}: ${last.error?.message}`);
      why = last.observedGeneration !== generation ? `observedGeneration is ${last.observedGeneration}, not ${generation}` : (done(last) ?? '');
      if (!why) return last;
      await sleep(pollMs);
    }
    throw new Failed(`not in place within ${waitMs / 1000} s: ${why}`);
  };
  const pool = (o: ClusterObservation, identity: string) => o.nodePools.find((p) => p.identity === identity);
  const poolReady = (o: ClusterObservation, identity: string, nodes: number) => {
    const p = pool(o, identity);
    if (!p) return `pool ${identity} is not observed`;
    if (p.desiredNodes !== nodes || p.readyNodes !== nodes || !p.ready) return `pool ${p.name} has ${p.readyNodes}/${p.desiredNodes} nodes (ready: ${p.ready}), ${nodes} wanted`;
    return null;
  };
  const signed = async (path: string, body: string, opts: { secret?: string; timestamp?: Date; id?: string; headers?: Record<string, string>; timeoutMs?: number } = {}) => {
    const id = opts.id ?? `msg_${randomUUID()}`;
    const timestamp = opts.timestamp ?? new Date();
    const res = await fetch(`${base}${path}`, {
      method: path.endsWith('capabilities') ? 'GET' : 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': new Webhook(opts.secret ?? options.secret).sign(id, timestamp, body),
        ...opts.headers,
      },
      body: path.endsWith('capabilities') ? undefined : body,
      signal: AbortSignal.timeout(opts.timeoutMs ?? timeoutMs),
    });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    return { status: res.status, json: json as { error?: { class?: string; code?: string } } | null };
  };
  const faultInjection = () => {
    if (!capabilities?.features.includes('faultInjection')) throw new Skipped('the driver does not declare the faultInjection feature');
  };

  const steps: Record<(typeof SCENARIOS)[number], () => Promise<string>> = {
    capabilities: async () => {
      capabilities = await driver.capabilities();
      check(capabilities.protocolVersion === 'v1', `protocolVersion is ${capabilities.protocolVersion}`);
      return `${capabilities.driver.name} ${capabilities.driver.version}; features: ${capabilities.features.join(', ') || 'none'}`;
    },
    'bad signature refused': async () => {
      const body = JSON.stringify(observeRequest(clusterSpec(), null));
      const wrong = await signed('/v1/observe', body, { secret: `whsec_${Buffer.from(randomUUID()).toString('base64')}` });
      check(wrong.status === 401, `a wrong secret was answered ${wrong.status}, not 401`);
      const old = await signed('/v1/observe', body, { timestamp: new Date(Date.now() - 10 * 60 * 1000) });
      check(old.status === 401, `a timestamp 10 minutes old was answered ${old.status}, not 401`);
      const id = `msg_${randomUUID()}`;
      const first = await signed('/v1/observe', body, { id });
      check(first.status === 200, `a right signature was answered ${first.status}`);
      const replay = await signed('/v1/observe', body, { id });
      check(replay.status === 401, `a replayed webhook-id was answered ${replay.status}, not 401`);
      return 'wrong secret, stale timestamp and replayed id: 401';
    },
    'unknown cluster': async () => {
      const unknown = clusterSpec();
      const o = await driver.observe(observeRequest(unknown, account));
      check(!o.exists && o.state === 'absent', `observe answered exists ${o.exists}, state ${o.state}`);
      const d = await driver.delete(deleteRequest(unknown, account));
      check(!d.exists, 'delete of an unknown cluster answered exists: true');
      return 'observe and delete answer absent';
    },
    create: async () => {
      const o = await applyAndWait(spec, (x) => {
        if (x.state !== 'running') return `state is ${x.state}`;
        if (!x.controlPlane?.ready || !x.controlPlane.endpoint) return 'the control plane is not ready with an endpoint';
        return poolReady(x, spec.nodePools[0].identity, 2);
      }, 'create');
      return `running ${o.version} at ${o.controlPlane?.endpoint}`;
    },
    'add a pool': async () => {
      const added = nodePool({ name: 'pool-2', minSize: 1, maxSize: 1 });
      await applyAndWait(nextGeneration(spec, (s) => s.nodePools.push({ ...added, generation: s.generation })), (x) => poolReady(x, added.identity, 1) ?? poolReady(x, spec.nodePools[0].identity, 2));
      return 'pool-2 ready with 1 node';
    },
    'resize a pool': async () => {
      const id = spec.nodePools[0].identity;
      await applyAndWait(nextGeneration(spec, (s) => Object.assign(s.nodePools[0], { minSize: 3, maxSize: 3, generation: s.generation })), (x) => poolReady(x, id, 3));
      return 'pool-1 from 2 to 3 nodes';
    },
    'delete a pool': async () => {
      const gone = spec.nodePools[1]?.identity;
      check(gone, 'no second pool (add a pool failed)');
      await applyAndWait(nextGeneration(spec, (s) => s.nodePools.splice(1, 1)), (x) => (pool(x, gone) ? 'pool-2 is still observed' : null));
      return 'pool-2 gone';
    },
    'toggle an add-on': async () => {
      await applyAndWait(nextGeneration(spec, (s) => (s.addons = [{ name: 'cert-manager', enabled: true, settings: {} }])), (x) =>
        x.addons.some((a) => a.name === 'cert-manager' && a.ready) ? null : 'cert-manager is not ready',
      );
      await applyAndWait(nextGeneration(spec, (s) => (s.addons = [{ name: 'cert-manager', enabled: false, settings: {} }])), (x) =>
        x.addons.some((a) => a.name === 'cert-manager' && a.ready) ? 'cert-manager is still ready' : null,
      );
      return 'cert-manager enabled, then disabled';
    },
    upgrade: async () => {
      await applyAndWait(nextGeneration(spec, (s) => (s.version = '1.32.0')), (x) => {
        if (x.version !== '1.32.0') return `the control plane runs ${x.version}`;
        const old = x.nodePools.find((p) => p.version !== '1.32.0');
        return old ? `pool ${old.name} runs ${old.version}` : null;
      }, 'upgrade');
      return 'control plane and pools on 1.32.0';
    },
    'stop and start': async () => {
      await applyAndWait(nextGeneration(spec, (s) => (s.desiredState = 'stopped')), (x) => (x.state === 'stopped' ? null : `state is ${x.state}`), 'stop');
      await applyAndWait(nextGeneration(spec, (s) => (s.desiredState = 'running')), (x) => (x.state !== 'running' ? `state is ${x.state}` : poolReady(x, spec.nodePools[0].identity, 3)), 'start');
      return 'stopped, then running with its nodes';
    },
    'repeated call with one idempotency key': async () => {
      const id = spec.nodePools[0].identity;
      const first = nextGeneration(spec, (s) => Object.assign(s.nodePools[0], { minSize: 2, maxSize: 2, generation: s.generation }));
      const request = applyRequest(first, account);
      await driver.apply(request);
      // The same key again, with a body that differs: the driver must not act on it a second time.
      const again = { ...request, cluster: nextGeneration(first, (s) => Object.assign(s.nodePools[0], { minSize: 4, maxSize: 4 })) };
      again.cluster.generation = first.generation;
      await driver.apply(again);
      spec = first;
      await waitFor(first.generation, (x) => poolReady(x, id, 2));
      return 'the first call of the key acted, its repetitions did not';
    },
    'reordered calls': async () => {
      const id = spec.nodePools[0].identity;
      const older = nextGeneration(spec, (s) => Object.assign(s.nodePools[0], { minSize: 1, maxSize: 1, generation: s.generation }));
      const newer = nextGeneration(older, (s) => Object.assign(s.nodePools[0], { minSize: 3, maxSize: 3, generation: s.generation }));
      await driver.apply(applyRequest(newer, account));
      await driver.apply(applyRequest(older, account));
      spec = newer;
      const o = await waitFor(newer.generation, (x) => poolReady(x, id, 3));
      check(o.observedGeneration === newer.generation, 'an older generation arrived after a newer one and was acted on');
      return 'a late older generation changed nothing';
    },
    'observe many': async () => {
      const unknown = clusterSpec();
      const answer = await driver.observeMany([observeRequest(spec, account), observeRequest(unknown, account)]);
      const mine = answer.get(spec.identity);
      check(mine?.exists && mine.observedGeneration === spec.generation, `the cluster was answered ${JSON.stringify(mine ?? null)}`);
      const other = answer.get(unknown.identity);
      check(!other || !other.exists, 'an unknown cluster was answered exists: true');
      return 'known and unknown clusters in one call';
    },
    'terminal error': async () => {
      const bad = nextGeneration(spec, (s) => (s.nodePools[0].nodeType = { name: 'invalid.conformance', cpu: null, memoryMb: null }));
      let terminal = false;
      try {
        const o = await driver.apply(applyRequest(bad, account));
        terminal = o.error?.class === 'terminal';
        if (!terminal) {
          // The driver may find out asynchronously: ask until it says so.
          const deadline = Date.now() + waitMs;
          while (!terminal && Date.now() < deadline) {
            const seen = await driver.observe(observeRequest(bad, account));
            terminal = seen.error?.class === 'terminal';
            if (!terminal) await sleep(pollMs);
          }
        }
      } catch (e) {
        check(e instanceof DriverCallError, `the call failed: ${(e as Error).message}`);
        check(e.driverError.class === 'terminal', `an unknown node type was answered ${e.driverError.class} ${e.driverError.code}`);
        terminal = true;
      }
      check(terminal, 'an unknown node type was never reported as a terminal error');
      // A corrected spec (a newer generation) is acted on again.
      const fixed = nextGeneration(bad, (s) => (s.nodePools[0].nodeType = { name: 'm5.large', cpu: 2, memoryMb: 8192 }));
      await applyAndWait(fixed, (x) => poolReady(x, spec.nodePools[0].identity, 3));
      return 'unknown node type: terminal; the corrected spec converges';
    },
    'retryable error': async () => {
      faultInjection();
      const res = await signed('/v1/observe', JSON.stringify(observeRequest(spec, account)), { headers: { 'x-driver-fault': 'retryable' } });
      const retryable = res.json?.error?.class === 'retryable' || (res.status >= 500 && !res.json?.error) || res.status === 429;
      check(res.status >= 400 && retryable, `an injected retryable fault was answered ${res.status} ${JSON.stringify(res.json)}`);
      return `HTTP ${res.status} ${res.json?.error?.code ?? ''}`.trim();
    },
    timeout: async () => {
      faultInjection();
      let timedOut = false;
      try {
        await signed('/v1/observe', JSON.stringify(observeRequest(spec, account)), { headers: { 'x-driver-fault': 'timeout' }, timeoutMs: Math.min(timeoutMs, 1000) });
      } catch (e) {
        timedOut = (e as Error).name === 'TimeoutError' || (e as Error).name === 'AbortError';
      }
      check(timedOut, 'the injected slow call answered within the timeout');
      const o = await observe();
      check(o.exists, 'after a timed-out call the cluster is not observed');
      return 'a slow call was given up; the next one was answered';
    },
    delete: async () => {
      const request = deleteRequest(spec, account);
      await driver.delete(request);
      const deadline = Date.now() + waitMs;
      let o = await observe();
      while (o.exists && Date.now() < deadline) {
        await sleep(pollMs);
        o = await observe();
      }
      check(!o.exists && o.state === 'absent', `still ${o.state} after ${waitMs / 1000} s`);
      const again = await driver.delete(request);
      check(!again.exists, 'a repeated delete answered exists: true');
      return 'gone; a repeated delete answers absent';
    },
  };

  for (const name of SCENARIOS) {
    try {
      results.push({ name, outcome: 'pass', detail: await steps[name]() });
    } catch (e) {
      if (e instanceof Skipped) results.push({ name, outcome: 'skip', detail: e.message });
      else if (e instanceof Failed) results.push({ name, outcome: 'fail', detail: e.message });
      else if (e instanceof DriverCallError) results.push({ name, outcome: 'fail', detail: `${e.driverError.class} ${e.driverError.code}: ${e.driverError.message}` });
      else results.push({ name, outcome: 'fail', detail: (e as Error).message });
    }
  }
  return results;
}

export function renderTable(results: ScenarioResult[]): string {
  const rows = results.map((r, i) => [String(i + 1), r.name, r.outcome.toUpperCase(), r.detail.replace(/\|/g, '\\|')]);
  const head = ['#', 'Scenario', 'Result', 'Detail'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  const failed = results.filter((r) => r.outcome === 'fail').length;
  const passed = results.filter((r) => r.outcome === 'pass').length;
  const skipped = results.filter((r) => r.outcome === 'skip').length;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line), '', `${passed} passed, ${failed} failed, ${skipped} skipped`].join('\n');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
