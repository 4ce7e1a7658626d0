import { execFileSync } from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { Client } from 'pg';
import { stringify } from 'yaml';
import { freePort } from '../../src/common/free-port';
import { descendants, isAlive, postmasterPid, Scratch, sleep, TrackedProcess } from './processes';

/**
 * A highly available PostgreSQL on loopback, from Debian's packages: one etcd 3.4, three Patroni 3.0.2 nodes running
 * PostgreSQL 15, and HAProxy 2.6 in front sending connections to the member whose Patroni answers `GET /primary` 200
 * (`on-marked-down shutdown-sessions`: connections to a member marked down are cut). Every address is 127.0.0.1 and
 * every port is chosen free; nothing is written outside the scratch directory.
 */

export const PG_BIN = '/usr/lib/postgresql/15/bin';
const SCOPE = 'cms-failover';
export const APP_DATABASE = 'cms';
export const APP_USER = 'cms';

/**
 * Patroni's timing: the leader key lives `ttl` seconds without renewal, each node runs its loop every `loop_wait`
 * seconds, and a DCS or PostgreSQL call is retried for `retry_timeout` (loop_wait + 2 × retry_timeout ≤ ttl).
 */
export const PATRONI_TIMING = { ttl: 20, loop_wait: 5, retry_timeout: 5 };
/** HAProxy's health check of each member: every second (500 ms while changing state), 2 failures down, 2 passes up. */
export const HAPROXY_CHECK = 'inter 1s fastinter 500ms fall 2 rise 2';

export interface PatroniNode {
  name: string;
  pgPort: number;
  restPort: number;
  dir: string;
  dataDir: string;
  patroni?: TrackedProcess;
}

export interface Member {
  name: string;
  role: string;
  state: string;
  lag?: number | string;
  timeline?: number;
}

export interface HaStackOptions {
  /** Patroni's synchronous_mode (a commit waits for one synchronous standby). */
  synchronous: boolean;
  /** Also synchronous_mode_strict (no commit without a synchronous standby, even when none is left). */
  synchronousStrict: boolean;
  /**
   * How Patroni talks to etcd: `etcd3` (the v3 API, the recommended one) or `etcd` (the v2 API, which etcd 3.4 serves
   * with --enable-v2). Patroni 3.0.2 renews the leader key differently on each (see docs/operations.md, Failover).
   */
  dcs: 'etcd3' | 'etcd';
}

export class HaStack {
  readonly nodes: PatroniNode[] = [];
  etcdPort = 0;
  haproxyPort = 0;
  readonly superuserPassword = randomBytes(12).toString('hex');
  readonly appPassword = randomBytes(12).toString('hex');
  private readonly replicationPassword = randomBytes(12).toString('hex');
  private readonly rewindPassword = randomBytes(12).toString('hex');
  /** PostgreSQL refuses to run as root: as root, Patroni (and so PostgreSQL) runs as the `postgres` user. */
  private readonly runAs = process.getuid?.() === 0 ? 'postgres' : undefined;

  constructor(
    private readonly scratch: Scratch,
    private readonly options: HaStackOptions,
  ) {}

  /** The service's DATABASE_URL: through HAProxy to whichever member is the primary. */
  get databaseUrl(): string {
    return `postgres://${APP_USER}:${this.appPassword}@127.0.0.1:${this.haproxyPort}/${APP_DATABASE}`;
  }

  async start(log: (line: string) => void): Promise<void> {
    const ports = await distinctFreePorts(9);
    this.etcdPort = ports[0];
    const etcdPeerPort = ports[1];
    this.haproxyPort = ports[2];
    for (let i = 0; i < 3; i++) {
      const name = `pg${i + 1}`;
      const dir = this.scratch.path(name);
      this.nodes.push({ name, pgPort: ports[3 + 2 * i], restPort: ports[4 + 2 * i], dir, dataDir: path.join(dir, 'data') });
    }

    const etcdDir = this.scratch.path('etcd');
    fs.mkdirSync(etcdDir, { mode: 0o700 });
    this.scratch.spawnDaemon('etcd', 'etcd', etcdArgs(path.join(etcdDir, 'data'), this.etcdPort, etcdPeerPort, this.options.dcs), path.join(etcdDir, 'etcd.log'));
    await waitFor('etcd', 30_000, async () => (await fetch(`http://127.0.0.1:${this.etcdPort}/health`)).ok);
    log(`etcd on 127.0.0.1:${this.etcdPort}`);

    // The first node bootstraps the cluster (initdb); the others then clone it (pg_basebackup) as replicas.
    for (const node of this.nodes) this.writePatroniConfig(node);
    this.startPatroni(this.nodes[0]);
    await waitFor('the first Patroni node to bootstrap', 90_000, async () => (await this.memberStatus(this.nodes[0])) === 200);
    for (const node of this.nodes.slice(1)) this.startPatroni(node);
    // With synchronous_mode_strict nothing commits before a synchronous standby exists: the replicas come first.
    await waitFor('the replicas to stream', 120_000, async () => {
      const members = await this.members();
      return members.length === 3 && members.every((m) => m.state === 'running' || m.state === 'streaming');
    });
    await this.createApplicationRole();

    this.writeHaproxyConfig();
    this.scratch.spawnDaemon('haproxy', 'haproxy', ['-f', this.scratch.path('haproxy.cfg'), '-db'], this.scratch.path('haproxy.log'));
    await waitFor('all three members to run and HAProxy to reach the primary', 120_000, async () => this.healthy());
    const members = await this.members();
    log(`Patroni: ${members.map((m) => `${m.name} ${m.role} ${m.state}`).join(', ')}; HAProxy on 127.0.0.1:${this.haproxyPort}`);
  }

  /** All three members running, the replicas streaming without lag, and HAProxy passing a connection to the primary. */
  async healthy(): Promise<boolean> {
    const members = await this.members().catch(() => []);
    if (members.length !== 3 || !members.some((m) => m.role === 'leader' && m.state === 'running')) return false;
    const replicasOk = members
      .filter((m) => m.role !== 'leader')
      .every((m) => ['running', 'streaming'].includes(m.state) && typeof m.lag === 'number' && m.lag < 1024 * 1024);
    if (!replicasOk) return false;
    const client = quiet(new Client({ connectionString: this.databaseUrl, connectionTimeoutMillis: 2000, query_timeout: 5000 }));
    try {
      await client.connect();
      const { rows } = await client.query('SELECT pg_is_in_recovery() AS standby');
      return rows[0].standby === false;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** The members as Patroni's REST API lists them (asked of each node in turn until one answers). */
  async members(): Promise<Member[]> {
    for (const node of this.nodes) {
      try {
        const res = await fetch(`http://127.0.0.1:${node.restPort}/cluster`, { signal: AbortSignal.timeout(2000) });
        if (res.ok) return ((await res.json()) as { members: Member[] }).members;
      } catch {
        /* next node */
      }
    }
    throw new Error('no Patroni node answered GET /cluster');
  }

  async leader(): Promise<PatroniNode | undefined> {
    const members = await this.members().catch(() => []);
    const name = members.find((m) => m.role === 'leader')?.name;
    return this.nodes.find((n) => n.name === name);
  }

  /** The status of the node's `GET /primary` (what HAProxy checks), 0 when it does not answer. */
  async memberStatus(node: PatroniNode): Promise<number> {
    try {
      return (await fetch(`http://127.0.0.1:${node.restPort}/primary`, { signal: AbortSignal.timeout(2000) })).status;
    } catch {
      return 0;
    }
  }

  /** A connection straight to a member (not through HAProxy), as the superuser, to the application's database. */
  async connectDirect(node: PatroniNode): Promise<Client> {
    const client = quiet(
      new Client({
        host: '127.0.0.1',
        port: node.pgPort,
        user: 'postgres',
        password: this.superuserPassword,
        database: APP_DATABASE,
        connectionTimeoutMillis: 5000,
        query_timeout: 60_000,
      }),
    );
    await client.connect();
    return client;
  }

  /** Planned switchover through Patroni's REST API: the leader hands over to a running replica. */
  async switchover(): Promise<{ from: string; to: string }> {
    const leader = await this.leader();
    if (!leader) throw new Error('switchover: no leader');
    const members = await this.members();
    const candidate = members.find((m) => m.role !== 'leader' && ['running', 'streaming'].includes(m.state))?.name;
    if (!candidate) throw new Error('switchover: no running replica');
    const res = await fetch(`http://127.0.0.1:${leader.restPort}/switchover`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader: leader.name, candidate }),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`switchover refused: ${res.status} ${text}`);
    return { from: leader.name, to: candidate };
  }

  /** `kill -9` of the primary's postmaster (its backends follow). */
  async killPrimaryPostmaster(): Promise<{ node: string; pid: number }> {
    const leader = await this.leader();
    if (!leader) throw new Error('kill: no leader');
    const pid = postmasterPid(leader.dataDir);
    if (!pid) throw new Error(`kill: no postmaster.pid in ${leader.dataDir}`);
    process.kill(pid, 'SIGKILL');
    return { node: leader.name, pid };
  }

  /**
   * Freezes the primary's whole instance (Patroni and every PostgreSQL process: SIGSTOP), as a VM pause or a
   * stalled host would; returns the function that resumes it (SIGCONT).
   */
  async freezePrimary(): Promise<{ node: string; pids: number[]; resume: () => void }> {
    const leader = await this.leader();
    if (!leader?.patroni) throw new Error('freeze: no leader');
    const postmaster = postmasterPid(leader.dataDir);
    const roots = [leader.patroni.pid, ...(postmaster ? [postmaster] : [])];
    const pids = [...new Set(roots.flatMap((p) => [p, ...descendants(p)]))];
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    return {
      node: leader.name,
      pids,
      resume: () => {
        for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGCONT');
      },
    };
  }

  /** Patroni's log of a node, for the report of what happened (e.g. a rewind). */
  patroniLog(node: PatroniNode): string {
    try {
      return fs.readFileSync(path.join(node.dir, 'patroni.log'), 'utf8');
    } catch {
      return '';
    }
  }

  private writePatroniConfig(node: PatroniNode): void {
    fs.mkdirSync(node.dir, { mode: 0o700 });
    const config = patroniConfig(node, this.etcdPort, this.options, {
      superuser: this.superuserPassword,
      replication: this.replicationPassword,
      rewind: this.rewindPassword,
    });
    fs.writeFileSync(path.join(node.dir, 'patroni.yml'), stringify(config), { mode: 0o600 });
    if (this.runAs) execFileSync('chown', ['-R', `${this.runAs}:${this.runAs}`, node.dir]);
    this.scratch.addDataDir(node.dataDir);
  }

  private startPatroni(node: PatroniNode): void {
    const config = path.join(node.dir, 'patroni.yml');
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: node.dir, PGPASSFILE: path.join(node.dir, 'pgpass') };
    delete env.PGHOST;
    delete env.PGPORT;
    delete env.DATABASE_URL;
    // setpriv execs Patroni in place (the PID we record is Patroni's) as `postgres` when we are root.
    const [command, args] = this.runAs
      ? ['setpriv', ['--reuid', this.runAs, '--regid', this.runAs, '--init-groups', '--', 'patroni', config]]
      : ['patroni', [config]];
    node.patroni = this.scratch.spawnDaemon(`patroni-${node.name}`, command, args as string[], path.join(node.dir, 'patroni.log'), { env, cwd: node.dir });
  }

  private async createApplicationRole(): Promise<void> {
    const leader = (await this.leader()) ?? this.nodes[0];
    const client = quiet(
      new Client({ host: '127.0.0.1', port: leader.pgPort, user: 'postgres', password: this.superuserPassword, database: 'postgres', query_timeout: 60_000 }),
    );
    await client.connect();
    try {
      await client.query(`CREATE ROLE ${APP_USER} LOGIN PASSWORD '${this.appPassword}'`);
      await client.query(`CREATE DATABASE ${APP_DATABASE} OWNER ${APP_USER}`);
    } finally {
      await client.end();
    }
  }

  private writeHaproxyConfig(): void {
    fs.writeFileSync(this.scratch.path('haproxy.cfg'), haproxyConfig(this.haproxyPort, this.nodes));
  }
}

/** etcd's command line: one member, client and peer addresses on loopback; the v2 API only when Patroni uses it. */
export function etcdArgs(dataDir: string, clientPort: number, peerPort: number, dcs: HaStackOptions['dcs']): string[] {
  return [
    '--name', 'etcd1',
    '--data-dir', dataDir,
    '--listen-client-urls', `http://127.0.0.1:${clientPort}`,
    '--advertise-client-urls', `http://127.0.0.1:${clientPort}`,
    '--listen-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-advertise-peer-urls', `http://127.0.0.1:${peerPort}`,
    '--initial-cluster', `etcd1=http://127.0.0.1:${peerPort}`,
    '--initial-cluster-state', 'new',
    ...(dcs === 'etcd' ? ['--enable-v2=true'] : []),
  ];
}

/** One node's patroni.yml: everything on loopback, the socket in the node's own directory, no watchdog. */
export function patroniConfig(node: PatroniNode, etcdPort: number, options: HaStackOptions, passwords: { superuser: string; replication: string; rewind: string }) {
  return {
    scope: SCOPE,
    namespace: '/service/',
    name: node.name,
    log: { level: 'INFO' },
    restapi: { listen: `127.0.0.1:${node.restPort}`, connect_address: `127.0.0.1:${node.restPort}` },
    [options.dcs]: { hosts: [`127.0.0.1:${etcdPort}`] },
    bootstrap: {
      dcs: {
        ...PATRONI_TIMING,
        maximum_lag_on_failover: 1024 * 1024,
        synchronous_mode: options.synchronous || options.synchronousStrict,
        synchronous_mode_strict: options.synchronousStrict,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: {
            wal_level: 'replica',
            hot_standby: 'on',
            wal_log_hints: 'on',
            max_connections: 100,
            max_wal_senders: 10,
            max_replication_slots: 10,
            wal_keep_size: '128MB',
          },
        },
      },
      initdb: [{ encoding: 'UTF8' }, { locale: 'C' }],
      pg_hba: [
        'local all all trust',
        'host replication replicator 127.0.0.1/32 scram-sha-256',
        'host all all 127.0.0.1/32 scram-sha-256',
      ],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${node.pgPort}`,
      data_dir: node.dataDir,
      bin_dir: PG_BIN,
      pgpass: path.join(node.dir, 'pgpass'),
      // A replica's first copy starts at once, not after a spread checkpoint (minutes at the default settings).
      basebackup: [{ checkpoint: 'fast' }],
      authentication: {
        superuser: { username: 'postgres', password: passwords.superuser },
        replication: { username: 'replicator', password: passwords.replication },
        rewind: { username: 'rewinder', password: passwords.rewind },
      },
      parameters: {
        unix_socket_directories: node.dir,
        shared_buffers: '64MB',
        // Quieter than the default on a shared two-core machine; fsync stays on.
        max_worker_processes: 4,
      },
    },
    // No watchdog device on this machine (and three nodes on one host cannot each own one): off, said explicitly.
    watchdog: { mode: 'off' },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
  };
}

/** HAProxy in front of the three members: a connection goes to the one whose Patroni answers GET /primary with 200. */
export function haproxyConfig(port: number, nodes: PatroniNode[]): string {
  const servers = nodes.map((n) => `    server ${n.name} 127.0.0.1:${n.pgPort} maxconn 200 check port ${n.restPort}`);
  return [
    'global',
    '    maxconn 1000',
    '',
    'defaults',
    '    mode tcp',
    '    retries 2',
    '    timeout connect 2s',
    // PostgreSQL connections (the service's pool, its LISTEN connection) are long-lived.
    '    timeout client 30m',
    '    timeout server 30m',
    '    timeout check 2s',
    '',
    'listen primary',
    `    bind 127.0.0.1:${port}`,
    '    option httpchk GET /primary',
    '    http-check expect status 200',
    `    default-server ${HAPROXY_CHECK} on-marked-down shutdown-sessions`,
    ...servers,
    '',
  ].join('\n');
}

/** A connection's late errors (its server stopped under it) are expected here: the query that fails says so. */
function quiet(client: Client): Client {
  client.on('error', () => undefined);
  return client;
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** Polls `check` (errors count as not yet) every 250 ms until it is true; throws after `timeoutMs`. */
export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    try {
      if (await check()) return Date.now() - start;
    } catch {
      /* not yet */
    }
    if (Date.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(250);
  }
}
