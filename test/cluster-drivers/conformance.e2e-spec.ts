import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { applyRequest, cloudAccount, clusterSpec, nextGeneration, observeRequest } from '../../drivers/conformance/fixtures';
import { SCENARIOS } from '../../drivers/conformance/kit';
import { HTTP_DRIVER_DEFAULTS, HttpClusterDriver } from '../../src/cluster-drivers/http-cluster-driver';
import { runConformanceCli, startExampleDriver } from './example-driver-process';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=';

/** The conformance kit (npm run driver:conformance) against the example driver (npm run driver:example), each its own process. */
describe('the cluster driver conformance kit', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-driver-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const rows = (output: string) =>
    Object.fromEntries(
      output
        .split('\n')
        .map((l) => /^\|\s*\d+\s*\|\s*(.+?)\s*\|\s*(PASS|FAIL|SKIP)\s*\|/.exec(l))
        .filter((m): m is RegExpExecArray => !!m)
        .map((m) => [m[1], m[2]]),
    );

  it('passes every scenario against the example driver', async () => {
    const driver = await startExampleDriver({ secret: SECRET, stateFile: path.join(dir, 'good.json') });
    try {
      const { code, output } = await runConformanceCli(driver.url, SECRET);
      expect({ code, rows: rows(output) }).toEqual({ code: 0, rows: Object.fromEntries(SCENARIOS.map((s) => [s, 'PASS'])) });
      expect(output).toContain(`${SCENARIOS.length} passed, 0 failed, 0 skipped`);
    } finally {
      await driver.stop();
    }
  });

  it('fails the idempotency scenario, and only it, against a driver that ignores idempotency keys', async () => {
    const driver = await startExampleDriver({ secret: SECRET, stateFile: path.join(dir, 'broken.json'), extra: ['--ignore-idempotency-keys'] });
    try {
      const { code, output } = await runConformanceCli(driver.url, SECRET, 10);
      expect(code).toBe(1);
      expect(rows(output)).toEqual(Object.fromEntries(SCENARIOS.map((s) => [s, s === 'repeated call with one idempotency key' ? 'FAIL' : 'PASS'])));
      expect(output).toMatch(/repeated call with one idempotency key \| FAIL\s*\| not in place within 10 s: pool pool-1 has 4\/4 nodes/);
    } finally {
      await driver.stop();
    }
  });

  it('keeps its state across a kill -9: the cluster goes on converging and a repeated key still has no effect', async () => {
    const stateFile = path.join(dir, 'restart.json');
    const first = await startExampleDriver({ secret: SECRET, stateFile, stepMs: 60_000 });
    const account = cloudAccount();
    const spec = clusterSpec();
    const request = applyRequest(spec, account, 'create');
    const client = (url: string) => new HttpClusterDriver({ ...HTTP_DRIVER_DEFAULTS, name: 'example', url, secret: SECRET, backoffBaseMs: 0, backoffMaxMs: 0 });
    expect(await client(first.url).apply(request)).toMatchObject({ exists: true, state: 'creating', observedGeneration: null });
    // The driver dies in the middle of the operation (its steps take a minute: nothing was done yet).
    await first.stop('SIGKILL');
    const second = await startExampleDriver({ secret: SECRET, stateFile, stepMs: 20 });
    try {
      const again = client(second.url);
      const converged = async (generation: number, nodes: number) => {
        for (let i = 0; i < 500; i++) {
          const o = await again.observe(observeRequest(spec, account));
          if (o.observedGeneration === generation && o.nodePools[0]?.readyNodes === nodes) return o;
          await new Promise((r) => setTimeout(r, 20));
        }
        throw new Error('the cluster did not converge after the restart');
      };
      expect(await converged(1, 2)).toMatchObject({ exists: true, state: 'running' });
      // The same key after the restart, with another body: no second effect (the keys were kept too).
      const changed = nextGeneration(spec, (s) => (s.nodePools[0].minSize = s.nodePools[0].maxSize = 5));
      await again.apply({ ...request, cluster: { ...changed, generation: 1 } });
      await new Promise((r) => setTimeout(r, 200));
      expect((await again.observe(observeRequest(spec, account))).nodePools[0]).toMatchObject({ desiredNodes: 2, readyNodes: 2 });
      // The state file holds no half-written document and no credentials.
      const text = fs.readFileSync(stateFile, 'utf8');
      expect(() => JSON.parse(text)).not.toThrow();
      expect(text).not.toContain(account.credentials!.values.accessKeySecret);
    } finally {
      await second.stop();
    }
  });
});
