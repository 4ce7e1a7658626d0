import { spawn } from 'child_process';
import * as path from 'path';
import { ADMIN_TOKEN, startTestApp, TestApp } from '../support/test-app';

/** The README's walk-through is a script; it runs here against a started service, so it stays true. */
describe('scripts/walkthrough.sh', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await startTestApp({ BACKGROUND_JOBS_ENABLED: 'true', RECONCILE_INTERVAL_SECONDS: '0.2', PROVISIONING_STEP_SECONDS: '0' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.getHttpServer().address() as { port: number };
    base = `http://127.0.0.1:${address.port}`;
  });
  afterAll(() => t.close());

  it('runs from a fresh token to a started cluster, a node pool, its deletion and the revoked token', async () => {
    const child = spawn('bash', [path.resolve(__dirname, '../../scripts/walkthrough.sh')], {
      env: { ...process.env, BASE: base, ADMIN_TOKEN, RUN: 'test', WAIT_SECONDS: '60' },
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect({ code, out }).toEqual({ code: 0, out: expect.stringContaining('Done.') });
    expect(out).toMatch(/started DONE/);
    expect(out).toMatch(/pool batch \(id \d+\)/);
    expect(out).toMatch(/CLUSTER_CREATED/);
    expect(out).toMatch(/revoked/i);
    // The token the script made and revoked no longer works.
    const [{ active }] = await t.db.query(`SELECT revoked_at IS NULL AS active FROM personal_access_tokens WHERE name = 'walkthrough-test'`);
    expect(active).toBe(false);
  }, 120_000);
});
