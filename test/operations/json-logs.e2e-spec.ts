import { ChildProcess, spawn } from 'child_process';
import * as path from 'path';
import { freePort } from '../../src/common/free-port';
import { ADMIN_TOKEN, createTestDatabase, TEST_ENCRYPTION_KEY } from '../support/test-app';

/**
 * Issue 39, item 6: the service's stdout is JSON lines only, from the start-up banner to the last shutdown line, and
 * a signal ends it with exit code 0 (docs/operations.md, "Logs"). The process is `npm start`'s entry point
 * (src/main.ts, run from the sources as the other process tests do).
 */

const ROOT = path.resolve(__dirname, '../..');

interface Line {
  level: number;
  time: number;
  msg: string;
  reqId?: string;
  [key: string]: unknown;
}

async function run(signal: NodeJS.Signals): Promise<{ code: number | null; lines: Line[]; raw: string[] }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    DATABASE_URL: await createTestDatabase(),
    CREDENTIALS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    BACKGROUND_JOBS_ENABLED: 'true',
    SHUTDOWN_DELAY_MS: '0',
  };
  const child: ChildProcess = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], { cwd: ROOT, env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  try {
    for (let i = 0; i < 600 && !stdout.includes('Swagger UI:'); i++) {
      if (child.exitCode !== null) throw new Error(`exited early:\n${stdout}\n${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const base = `http://127.0.0.1:${port}`;
    const auth = { Authorization: `Token ${ADMIN_TOKEN}` };
    expect((await fetch(`${base}/api/v1/memberships`, { headers: { ...auth, 'X-Request-Id': 'json-logs-test-1' } })).status).toBe(200);
    expect((await fetch(`${base}/api/v1/orgs/no-such-org/clusters`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${base}/api/v1/memberships`)).status).toBe(401);
    expect((await fetch(`${base}/health/ready`)).status).toBe(200);
    child.kill(signal);
    const code = await exited;
    const raw = stdout.split('\n').filter((l) => l.length > 0);
    return { code, raw, lines: raw.map((l) => JSON.parse(l) as Line) };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

describe('the logs on stdout', () => {
  it('are JSON lines from the start-up banner to the end of a SIGTERM, which exits 0', async () => {
    const { code, lines, raw } = await run('SIGTERM');
    expect(code).toBe(0);
    expect(raw.length).toBe(lines.length);
    for (const line of lines) {
      expect(typeof line.level).toBe('number');
      expect(typeof line.time).toBe('number');
      expect(typeof line.msg).toBe('string');
    }
    const msgs = lines.map((l) => l.msg);
    expect(msgs).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Cluster Management Service \(Node\.js v24[\d.]+\) listening on http:\/\/127\.0\.0\.1:\d+$/),
        expect.stringMatching(/^ {2}Swagger UI: http:\/\/127\.0\.0\.1:\d+\/swagger-ui$/),
        'SIGTERM received: finishing in-flight requests and stopping',
        'Stopped',
      ]),
    );
    expect(msgs[msgs.length - 1]).toBe('Stopped');
    // One line per request, as docs/operations.md shows it: the caller's request id, the route template, the status.
    const request = lines.find((l) => l.reqId === 'json-logs-test-1');
    expect(request).toMatchObject({ level: 30, msg: 'request completed', method: 'GET', route: '/api/v1/memberships', status: 200 });
    expect(lines.find((l) => l.msg === 'request refused' && l.status === 404)).toMatchObject({ level: 40, route: '/api/v1/orgs/:organisationSlug/clusters' });
    expect(lines.find((l) => l.msg === 'request refused' && l.status === 401)).toMatchObject({ level: 40 });
  }, 120_000);

  it('end with exit code 0 on SIGINT (Ctrl-C)', async () => {
    const { code, lines } = await run('SIGINT');
    expect(code).toBe(0);
    expect(lines.map((l) => l.msg)).toContain('SIGINT received: finishing in-flight requests and stopping');
  }, 120_000);
});
