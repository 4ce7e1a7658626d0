import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { etcdArgs, haproxyConfig, patroniConfig, type PatroniNode } from '../failover/ha-stack';
import { isAlive, Scratch, SCRATCH_PREFIX, sleep, startTime } from '../failover/processes';

/**
 * What docs/operations.md says about the failover test's stack: everything on loopback (nothing reaches another
 * address or port 5432), HAProxy checking Patroni's /primary and cutting sessions to a member marked down, no
 * watchdog; and that nothing it starts outlives it.
 */
const node = (i: number): PatroniNode => ({ name: `pg${i}`, pgPort: 40000 + i, restPort: 41000 + i, dir: `/tmp/x/pg${i}`, dataDir: `/tmp/x/pg${i}/data` });
const options = { synchronous: false, synchronousStrict: false, dcs: 'etcd3' as const };
const passwords = { superuser: 's', replication: 'r', rewind: 'w' };

/** Every host:port or URL in a text, with the host. */
const addresses = (text: string) => [...text.matchAll(/(?:https?:\/\/)?(\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[^\]]+\]|0\.0\.0\.0):(\d+)/g)].map((m) => m[1]);

describe('failover stack configuration', () => {
  it('puts etcd, Patroni and PostgreSQL on 127.0.0.1 only, with the v2 API only when asked', () => {
    const args = etcdArgs('/tmp/x/etcd', 42000, 42001, 'etcd3');
    expect(new Set(addresses(args.join(' ')))).toEqual(new Set(['127.0.0.1']));
    expect(args).not.toContain('--enable-v2=true');
    expect(etcdArgs('/tmp/x/etcd', 42000, 42001, 'etcd')).toContain('--enable-v2=true');

    const config = patroniConfig(node(1), 42000, options, passwords);
    const text = JSON.stringify(config);
    expect(new Set(addresses(text))).toEqual(new Set(['127.0.0.1']));
    expect(text).not.toMatch(/:5432\b/);
    expect(config.postgresql.listen).toBe('127.0.0.1:40001');
    expect(config.postgresql.parameters.unix_socket_directories).toBe('/tmp/x/pg1');
    expect(config.watchdog).toEqual({ mode: 'off' });
    expect(config.bootstrap.pg_hba.filter((l) => l.startsWith('host')).every((l) => l.includes(' 127.0.0.1/32 '))).toBe(true);
    expect(config).toHaveProperty('etcd3');
    expect(patroniConfig(node(1), 42000, { ...options, dcs: 'etcd' }, passwords)).toHaveProperty('etcd');
    expect(patroniConfig(node(1), 42000, { ...options, synchronousStrict: true }, passwords).bootstrap.dcs).toMatchObject({
      synchronous_mode: true,
      synchronous_mode_strict: true,
    });
  });

  it('has HAProxy on 127.0.0.1 send connections to the member whose Patroni answers /primary, cutting sessions when it is marked down', () => {
    const cfg = haproxyConfig(43000, [node(1), node(2), node(3)]);
    expect(new Set(addresses(cfg))).toEqual(new Set(['127.0.0.1']));
    expect(cfg).toContain('bind 127.0.0.1:43000');
    expect(cfg).toContain('option httpchk GET /primary');
    expect(cfg).toContain('http-check expect status 200');
    expect(cfg).toMatch(/default-server .* on-marked-down shutdown-sessions/);
    for (const i of [1, 2, 3]) expect(cfg).toContain(`server pg${i} 127.0.0.1:${40000 + i} maxconn 200 check port ${41000 + i}`);
  });
});

describe('failover scratch directory and processes', () => {
  it('stops every daemon it started and removes its directory', async () => {
    const scratch = new Scratch();
    const daemon = scratch.spawnDaemon('daemon', 'sh', ['-c', 'sleep 300', scratch.path('marker')], scratch.path('daemon.log'));
    expect(isAlive(daemon.pid)).toBe(true);
    await scratch.stopAll([['daemon']], 5_000);
    await sleep(100);
    expect(isAlive(daemon.pid)).toBe(false);
    expect(fs.existsSync(scratch.dir)).toBe(false);
  });

  it('keeps the directory of a run with FAILOVER_KEEP_SCRATCH=1, everything in it stopped, and the next run leaves it alone', async () => {
    const before = process.env.FAILOVER_KEEP_SCRATCH;
    process.env.FAILOVER_KEEP_SCRATCH = '1';
    let kept: string | undefined;
    try {
      const scratch = new Scratch();
      kept = scratch.dir;
      const daemon = scratch.spawnDaemon('daemon', 'sh', ['-c', 'sleep 300', scratch.path('marker')], scratch.path('daemon.log'));
      await scratch.stopAll([['daemon']], 5_000);
      await sleep(100);
      expect(isAlive(daemon.pid)).toBe(false);
      expect(fs.existsSync(path.join(kept, 'daemon.log'))).toBe(true);
      // The run ends: its owner's PID is no longer running (whatever state it left names a dead owner).
      const { spawn } = await import('child_process');
      const deadOwner = spawn('true');
      await new Promise((r) => deadOwner.once('exit', r));
      const statePath = path.join(kept, 'state.json');
      if (fs.existsSync(statePath)) fs.writeFileSync(statePath, JSON.stringify({ ...JSON.parse(fs.readFileSync(statePath, 'utf8')), ownerPid: deadOwner.pid, ownerStart: undefined }));
      // The next run's reaper (in its constructor) leaves the kept directory alone.
      const next = new Scratch();
      next.killAllNow();
      fs.rmSync(next.dir, { recursive: true, force: true });
      expect(fs.existsSync(path.join(kept, 'daemon.log'))).toBe(true);
    } finally {
      if (before === undefined) delete process.env.FAILOVER_KEEP_SCRATCH;
      else process.env.FAILOVER_KEEP_SCRATCH = before;
      if (kept) fs.rmSync(kept, { recursive: true, force: true });
    }
  });

  it('stops the daemons a killed run left behind, and only those', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), SCRATCH_PREFIX));
    const { spawn } = await import('child_process');
    const left = spawn('sh', ['-c', 'sleep 300', path.join(dir, 'marker')], { detached: true, stdio: 'ignore' });
    const stranger = spawn('sh', ['-c', 'sleep 300', 'unrelated'], { detached: true, stdio: 'ignore' });
    // The owner is a PID that is not running: a run killed with SIGKILL. The stranger is listed with the dead run's
    // marker, as a recycled PID would be: its command line does not match, so it must survive.
    const deadOwner = spawn('true');
    await new Promise((r) => deadOwner.once('exit', r));
    fs.writeFileSync(
      path.join(dir, 'state.json'),
      JSON.stringify({
        ownerPid: deadOwner.pid,
        processes: [
          { name: 'left', pid: left.pid, marker: dir },
          { name: 'recycled', pid: stranger.pid, marker: dir },
        ],
        dataDirs: [],
      }),
    );
    // A live run's directory is left alone.
    const live = fs.mkdtempSync(path.join(os.tmpdir(), SCRATCH_PREFIX));
    fs.writeFileSync(path.join(live, 'state.json'), JSON.stringify({ ownerPid: process.pid, ownerStart: startTime(process.pid), processes: [], dataDirs: [] }));
    const scratch = new Scratch();
    try {
      await sleep(200);
      expect(fs.existsSync(live)).toBe(true);
      expect(isAlive(left.pid!)).toBe(false);
      expect(fs.existsSync(dir)).toBe(false);
      expect(isAlive(stranger.pid!)).toBe(true);
    } finally {
      stranger.kill('SIGKILL');
      scratch.killAllNow();
      fs.rmSync(live, { recursive: true, force: true });
    }
  });
});
