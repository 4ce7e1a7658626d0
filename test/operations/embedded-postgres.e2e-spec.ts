import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Client } from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { createApp, RunningApp } from '../../src/app.factory';
import { loadConfig } from '../../src/config/app-config';
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres';
import { recordResponses } from '../support/openapi-conformance';
import { ADMIN_TOKEN } from '../support/test-app';

const postmasterPid = (dataDir: string) => Number(fs.readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
async function until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

describe('embedded PostgreSQL lifecycle', () => {
  jest.setTimeout(120_000);

  it('runs with fsync on by default, fails liveness while its PostgreSQL is down, and restarts it', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-embedded-'));
    const running: RunningApp = await createApp(
      loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN, BACKGROUND_JOBS_ENABLED: 'false', LOG_LEVEL: 'silent', DEMO_DATA: 'false' }),
      // Its answers are checked against the document too (test/support/openapi-conformance.ts).
      { quiet: true, instrument: recordResponses },
    );
    try {
      const server = running.app.getHttpServer();
      const [{ fsync }] = await running.app.get(DataSource).query('SHOW fsync');
      expect(fsync).toBe('on');
      await request(server).get('/health').expect(200);

      const pid = postmasterPid(dataDir);
      process.kill(pid, 'SIGKILL');
      expect(await until(async () => (await request(server).get('/health')).status === 503, 30_000)).toBe(true);
      expect(await until(async () => (await request(server).get('/health')).status === 200, 30_000)).toBe(true);
      expect(postmasterPid(dataDir)).not.toBe(pid);
      expect(await until(async () => (await request(server).get('/health/ready')).status === 200, 15_000)).toBe(true);
      await request(server).get('/sts/v1/personal-access-tokens').set('Authorization', `Token ${ADMIN_TOKEN}`).expect(200);
    } finally {
      await running.close();
    }
  });

  it('stops a postmaster orphaned by a killed service instead of refusing to start', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cms-orphan-'));
    // A service instance in another process starts the database, then dies with SIGKILL.
    const child = spawn(
      process.execPath,
      [
        '--require',
        '@swc-node/register',
        '-e',
        `require(${JSON.stringify(path.resolve(__dirname, '../../src/database/embedded-postgres.ts'))})` +
          `.startEmbeddedPostgres(${JSON.stringify(dataDir)}).then(() => console.log('up'))`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], cwd: path.resolve(__dirname, '../..') },
    );
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => d.toString().includes('up') && resolve());
      child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
    });
    const orphan = postmasterPid(dataDir);
    child.kill('SIGKILL');
    await until(() => child.exitCode !== null || child.signalCode !== null, 5000);
    expect(alive(orphan)).toBe(true);

    const db = await startEmbeddedPostgres(dataDir);
    try {
      expect(alive(orphan)).toBe(false);
      const client = new Client({ connectionString: db.url });
      await client.connect();
      expect((await client.query('SELECT 1 AS one')).rows[0].one).toBe(1);
      await client.end();
    } finally {
      await db.stop();
    }
  });
});
