import { spawn } from 'child_process';
import * as path from 'path';
import { freePort } from '../../src/common/free-port';
import { ADMIN_TOKEN, createTestDatabase, TEST_ENCRYPTION_KEY } from '../support/test-app';

/**
 * A quiet start: `npm start`'s entry point (src/main.ts) starts, serves a request and stops without a single process
 * warning: no DeprecationWarning, no Fastify FSTDEP deprecation (options in their Fastify 5 places: the log controller,
 * routerOptions). Node writes every process warning to stderr as `(node:<pid>) ...`; the child runs without the test
 * runner's NODE_OPTIONS, so nothing is silenced.
 */
describe('start-up', () => {
  it('prints no deprecation or other process warning from start to stop', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_OPTIONS: '',
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: await createTestDatabase(),
      CREDENTIALS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
      BACKGROUND_JOBS_ENABLED: 'false',
      DATABASE_POOL_SIZE: '3',
      SHUTDOWN_DELAY_MS: '0',
    };
    for (const key of Object.keys(env)) if (env[key] === '') delete env[key];
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], { cwd: path.resolve(__dirname, '../..'), env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      const started = await Promise.race([
        new Promise<boolean>((resolve) => {
          const timer = setInterval(() => {
            if (stdout.includes('Swagger UI:')) {
              clearInterval(timer);
              resolve(true);
            }
          }, 100);
          void exited.then(() => clearInterval(timer));
        }),
        exited.then(() => false),
      ]);
      expect({ started, stderr }).toEqual({ started: true, stderr: expect.any(String) });
      // Requests reach the router, the serializers and the document (some warnings appear only on first use).
      const ok = await fetch(`http://127.0.0.1:${port}/api/v1/organisations/acme/me`, { headers: { Authorization: `Token ${ADMIN_TOKEN}` } });
      expect([200, 404]).toContain(ok.status);
      expect((await fetch(`http://127.0.0.1:${port}/v3/api-docs`)).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const output = `${stdout}\n${stderr}`;
    expect(output).not.toMatch(/DeprecationWarning|FSTDEP|FastifyDeprecation|FastifyWarning/);
    expect(stderr.split('\n').filter((line) => /^\(node:\d+\) /.test(line))).toEqual([]);
  }, 90_000);
});
