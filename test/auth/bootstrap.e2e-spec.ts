import { ChildProcess, spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import { ADMIN_TOKEN, createTestDatabase, startTestApp } from '../support/test-app';
import { freePort } from '../../src/common/free-port';

describe('bootstrap administrator', () => {
  it('is created exactly once across restarts on the same database', async () => {
    const url = await createTestDatabase();
    const first = await startTestApp({}, url);
    await first.admin().get('/sts/v1/personal-access-tokens').expect(200);
    await first.close();
    const second = await startTestApp({ BOOTSTRAP_ADMIN_TOKEN: 'cms_a_different_token_that_must_not_be_used' }, url);
    const users = await second.db.query(`SELECT username, platform_admin, can_create_organisations FROM users`);
    expect(users).toEqual([{ username: 'admin', platform_admin: true, can_create_organisations: true }]);
    const tokens = await second.db.query(`SELECT count(*)::int AS n FROM personal_access_tokens`);
    expect(tokens[0].n).toBe(1);
    await second.admin().get('/sts/v1/personal-access-tokens').expect(200);
    expect(ADMIN_TOKEN).toBeTruthy();
    await second.close();
  });

  it('on an external database, needs BOOTSTRAP_ADMIN_TOKEN or BOOTSTRAP_ADMIN_TOKEN_FILE and never prints the token', async () => {
    const refusedOn = await createTestDatabase();
    await expect(startTestApp({ BOOTSTRAP_ADMIN_TOKEN: '' }, refusedOn)).rejects.toThrow(/BOOTSTRAP_ADMIN_TOKEN_FILE/);
    // The failed start-up closed what it had opened: no connection of the service to that database is left (its
    // LISTEN connection would otherwise keep reconnecting in this process).
    const db = new Client({ connectionString: refusedOn });
    await db.connect();
    try {
      // A backend leaves pg_stat_activity a moment after its client has gone: wait for that (a leak never goes).
      const others = async () =>
        (await db.query(`SELECT application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)).rows;
      for (let i = 0; i < 100 && (await others()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await others()).toEqual([]);
    } finally {
      await db.end();
    }
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cms-token-')), 'admin-token');
    const writes: string[] = [];
    const original = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      writes.push(String(chunk));
      return original(chunk, ...rest);
    }) as typeof process.stdout.write;
    try {
      const app = await startTestApp({ BOOTSTRAP_ADMIN_TOKEN: '', BOOTSTRAP_ADMIN_TOKEN_FILE: file });
      const token = fs.readFileSync(file, 'utf8').trim();
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      await app.as(token).get('/sts/v1/personal-access-tokens').expect(200);
      await app.close();
      expect(writes.join('')).not.toContain(token);
    } finally {
      process.stdout.write = original;
    }
  });
});


/** Polls the output (a loaded machine may deliver the last lines later) instead of sleeping a fixed time. */
async function outputShows(output: () => string, text: string, timeoutMs = 30_000): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end && !output().includes(text)) await new Promise((r) => setTimeout(r, 50));
  return output().includes(text);
}

function startService(dataDir: string, port: number): { child: ChildProcess; output: () => string; ready: Promise<void>; exited: Promise<number | null> } {
  let out = '';
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  delete env.CREDENTIALS_ENCRYPTION_KEY;
  const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], { cwd: path.resolve(__dirname, '../..'), env });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes('Swagger UI:')) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
    child.on('exit', () => {
      clearInterval(timer);
      reject(new Error(`service exited early:\n${out}`));
    });
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, ready, exited };
}

describe('npm start path: embedded PostgreSQL under DATA_DIR', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-embedded-'));
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('starts, prints and writes the admin token once (after the demo organisation), stops cleanly on SIGTERM, and restarts without a new admin', async () => {
    const port = await freePort();
    const run1 = startService(dataDir, port);
    await run1.ready;
    const tokenFile = path.join(dataDir, 'admin-token');
    const token = fs.readFileSync(tokenFile, 'utf8').trim();
    expect(fs.statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(run1.output()).toContain(`personal access token (shown once): ${token}`);
    // The start-up output ends with the addresses and the admin token; Nest's route lines are debug only;
    // no secret of the data directory reaches the output.
    expect(await outputShows(run1.output, 'Authorization: Token <token>')).toBe(true);
    const lines1 = run1.output().trim().split('\n');
    expect(lines1.slice(-14).join('\n')).toMatch(
      /Swagger UI: http:\/\/127\.0\.0\.1:\d+\/swagger-ui[\s\S]*Demo organisation 'acme'[\s\S]*DEMO_DATA=false[\s\S]*Authorization: Token <token>/,
    );
    const demo = await fetch(`http://127.0.0.1:${port}/api/v1/orgs/acme/clusters/production/web`, { headers: { Authorization: `Token ${token}` } });
    expect(demo.status).toBe(200);
    expect(run1.output()).not.toContain('Mapped {');
    expect(run1.output()).toContain('Node.js v24');
    for (const secretFile of ['pg-password', 'credentials.key']) {
      expect(run1.output()).not.toContain(fs.readFileSync(path.join(dataDir, secretFile), 'utf8').trim());
    }
    const ready = await fetch(`http://127.0.0.1:${port}/health/ready`);
    expect(ready.status).toBe(200);
    const me = await fetch(`http://127.0.0.1:${port}/sts/v1/personal-access-tokens`, { headers: { Authorization: `Token ${token}` } });
    expect(me.status).toBe(200);
    run1.child.kill('SIGTERM');
    expect(await run1.exited).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);

    const port2 = await freePort();
    const run2 = startService(dataDir, port2);
    await run2.ready;
    expect(run2.output()).not.toContain('shown once');
    expect(await outputShows(run2.output, `Admin token: ${tokenFile}`)).toBe(true);
    expect(run2.output()).not.toContain('was created on this first start');
    expect(run2.output().trim().split('\n').pop()).toContain(`Admin token: ${tokenFile}`);
    const again = await fetch(`http://127.0.0.1:${port2}/sts/v1/personal-access-tokens`, { headers: { Authorization: `Token ${token}` } });
    expect(again.status).toBe(200);
    run2.child.kill('SIGINT');
    expect(await run2.exited).toBe(0);
  }, 120000);

  it('refuses the embedded database in production unless explicitly allowed', async () => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, NODE_ENV: 'production', DATABASE_URL: '', DATA_DIR: dataDir },
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(err).toMatch(/DATABASE_URL is required when NODE_ENV=production[\s\S]*ALLOW_EMBEDDED_DATABASE/);
  }, 60000);

  it('a wrong setting stops start-up with a message naming the variable', async () => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, PORT: 'not-a-port' },
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(err).toMatch(/PORT/);
  }, 60000);

  it('an OIDC issuer without an audience stops start-up (exit code 2) naming both variables', async () => {
    const child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, OIDC_ISSUER_URL: 'https://login.example.com', OIDC_AUDIENCE: '' },
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(err).toMatch(/OIDC_AUDIENCE is required when OIDC_ISSUER_URL is set/);
  }, 60000);
});
