import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ADMIN_TOKEN, startTestApp, TestApp } from '../support/test-app';

/** The walk-through (docs/operations.md) is a script; it runs here against a started service, so it stays true. */
const SCRIPT = path.resolve(__dirname, '../../scripts/walkthrough.sh');

/** Runs the script with `env` (ADMIN_TOKEN and DATA_DIR removed unless given) in `cwd`; its exit code and output. */
async function runScript(env: Record<string, string>, cwd?: string): Promise<{ code: number | null; out: string }> {
  const base = { ...process.env };
  delete base.ADMIN_TOKEN;
  delete base.DATA_DIR;
  const child = spawn('bash', [SCRIPT], { env: { ...base, ...env }, cwd });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  return { code, out };
}

/** Node prints stack frames as "    at fn (file:line:col)"; none may reach the user. */
const STACK_FRAME = /^\s+at .+[:(]/m;

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
    const { code, out } = await runScript({ BASE: base, ADMIN_TOKEN, RUN: 'test', WAIT_SECONDS: '60' });
    expect({ code, out }).toEqual({ code: 0, out: expect.stringContaining('Done.') });
    expect(out).toMatch(/started DONE/);
    expect(out).toMatch(/pool batch \(id \d+\)/);
    expect(out).toMatch(/CLUSTER_CREATED/);
    expect(out).toMatch(/revoked/i);
    // The token the script made and revoked no longer works.
    const [{ active }] = await t.db.query(`SELECT revoked_at IS NULL AS active FROM personal_access_tokens WHERE name = 'walkthrough-test'`);
    expect(active).toBe(false);
  }, 120_000);

  it('stops at the first failed step, printing the request, the status and the answer, without a stack trace', async () => {
    const { code, out } = await runScript({ BASE: base, ADMIN_TOKEN: 'cms_not_a_valid_token', RUN: 'bad' });
    expect(code).toBe(1);
    expect(out).toContain('FAILED: POST /sts/v1/personal-access-tokens');
    expect(out).toContain('request body: {"name":"walkthrough-bad","type":{"name":"FULL_ACCESS"}}');
    expect(out).toContain('status: 401');
    expect(out).toMatch(/answer: \{.*"status":401/);
    expect(out).not.toMatch(STACK_FRAME);
    // Nothing after the failed step ran.
    expect(out).not.toContain('2. An organisation');
  });

  it('says so when no service answers at BASE', async () => {
    const { code, out } = await runScript({ BASE: 'http://127.0.0.1:9', ADMIN_TOKEN });
    expect(code).toBe(1);
    expect(out).toContain('no answer (is the service running at http://127.0.0.1:9?)');
    expect(out).not.toMatch(STACK_FRAME);
  });

  it('reads the token from $DATA_DIR/admin-token, else .data/admin-token, and says how when there is none', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'walkthrough-'));
    try {
      // A token that is not valid in each file: the first request answers 401, which shows a token was read and sent.
      fs.mkdirSync(path.join(dir, 'data'));
      fs.writeFileSync(path.join(dir, 'data', 'admin-token'), 'cms_from_data_dir\n');
      const fromDataDir = await runScript({ BASE: base, DATA_DIR: path.join(dir, 'data'), RUN: 'dd' }, dir);
      expect(fromDataDir.out).toContain('status: 401');

      // DATA_DIR without a token file: .data/admin-token (in the working directory) is read.
      fs.mkdirSync(path.join(dir, '.data'));
      fs.writeFileSync(path.join(dir, '.data', 'admin-token'), 'cms_from_dot_data\n');
      const fromDotData = await runScript({ BASE: base, DATA_DIR: path.join(dir, 'empty'), RUN: 'dot' }, dir);
      expect(fromDotData.out).toContain('status: 401');
      expect(fromDotData.out).not.toContain('No administrator token');

      fs.rmSync(path.join(dir, '.data'), { recursive: true });
      const none = await runScript({ BASE: base }, dir);
      expect(none.code).toBe(1);
      expect(none.out).toContain('No administrator token: set ADMIN_TOKEN');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
