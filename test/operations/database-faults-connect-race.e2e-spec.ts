import * as net from 'net';
import { Client } from 'pg';
import { databaseUnavailable } from '../../src/common/database-unavailable';
import { budgetedPg } from '../../src/database/database-wait-budget';
import { createTestDatabase } from '../support/test-app';

/**
 * After a failure is seen, the pool hands out no session of the server that failed: the read retry that comes next
 * would lose it at its first statement (57P01) and answer 503. Two such sessions: one whose opening straddles the
 * failure (a backend that finished its start-up just before a switchover's fast shutdown, or forked just before a
 * kill -9 of the postmaster), and an idle one when the failure was heard outside any statement (between two
 * statements of a request, which then fails with TypeORM's QueryRunnerAlreadyReleasedError)
 * (docs/adr/0198-connections-begun-before-a-failure-are-not-handed-out.md).
 */

/** The type byte of PostgreSQL's ReadyForQuery message ('Z'), which ends a connection's start-up. */
const READY_FOR_QUERY = 0x5a;

interface Link {
  client: net.Socket;
  upstream: net.Socket;
  /** What the server sends is held (in `held`), its close too (`closed`). */
  holding: boolean;
  /** Opened while holdNew() was on: the server's messages go through until ReadyForQuery, which starts holding. */
  untilReady: boolean;
  /** Server bytes not yet forwarded while looking for ReadyForQuery. */
  parsed: Buffer;
  held: Buffer[];
  closed: boolean;
}

/**
 * A TCP proxy that can hold what the server sends on a connection, its close included, and release it later: a
 * connection begun before a failure whose client learns it is ready after it (hold from the server's ReadyForQuery on,
 * for connections opened while `holdNew` is on), or an idle session whose server died while its client has not heard
 * of it yet (`holdConnection`).
 */
class HoldingProxy {
  private server?: net.Server;
  private readonly links = new Map<number, Link>();
  private holdingNew = false;
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.host);
      const link: Link = { client, upstream, holding: false, untilReady: this.holdingNew, parsed: Buffer.alloc(0), held: [], closed: false };
      const clientPort = client.remotePort!;
      this.links.set(clientPort, link);
      client.on('error', () => undefined).on('close', () => {
        upstream.destroy();
        this.links.delete(clientPort);
      });
      upstream.on('error', () => undefined).on('close', () => {
        if (link.holding) link.closed = true;
        else client.destroy();
      });
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => this.fromServer(link, chunk));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  private fromServer(link: Link, chunk: Buffer): void {
    if (link.holding) return void link.held.push(chunk);
    if (!link.untilReady) return void link.client.write(chunk);
    // The start-up (authentication, parameters) goes through; from ReadyForQuery on, what the server sends is held:
    // the backend is started and idle, its client still waits to hear that it is ready.
    const data = Buffer.concat([link.parsed, chunk]);
    let at = 0;
    while (data.length - at >= 5 && data[at] !== READY_FOR_QUERY) {
      const length = data.readInt32BE(at + 1);
      if (data.length - at < 1 + length) break;
      at += 1 + length;
    }
    if (at > 0) link.client.write(data.subarray(0, at));
    link.parsed = data.subarray(at);
    if (link.parsed.length > 0 && link.parsed[0] === READY_FOR_QUERY) {
      link.untilReady = false;
      link.holding = true;
      link.held.push(link.parsed);
    }
  }

  /** Connections opened from now on get nothing from the server after their start-up until release(). */
  holdNew(): void {
    this.holdingNew = true;
  }

  /** The connection whose client uses `clientPort` gets nothing from the server, not even its close, until release(). */
  holdConnection(clientPort: number): void {
    const link = this.links.get(clientPort);
    if (!link) throw new Error(`no connection from port ${clientPort}`);
    link.holding = true;
  }

  /** Forwards what was held (and a close), and everything after it. */
  release(): void {
    this.holdingNew = false;
    for (const link of this.links.values()) {
      if (link.untilReady) {
        link.untilReady = false;
        if (link.parsed.length > 0) link.client.write(link.parsed);
      }
      if (!link.holding) continue;
      link.holding = false;
      for (const chunk of link.held.splice(0)) link.client.write(chunk);
      if (link.closed) link.client.end();
    }
  }

  async stop(): Promise<void> {
    for (const link of this.links.values()) {
      link.client.destroy();
      link.upstream.destroy();
    }
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  wrap(url: string, applicationName: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    u.searchParams.set('application_name', applicationName);
    return u.toString();
  }
}

describe('no session of the server that failed is handed out after the failure is seen', () => {
  jest.setTimeout(30_000);
  const app = 'cms-connect-race';
  let url: string;
  let proxy: HoldingProxy;
  let admin: Client;
  let pool: InstanceType<typeof budgetedPg.Pool>;

  beforeAll(async () => {
    url = await createTestDatabase();
    const u = new URL(url);
    proxy = new HoldingProxy(u.hostname, Number(u.port));
    await proxy.start();
    admin = new Client({ connectionString: url });
    await admin.connect();
    // The request pool's class (what TypeORM makes from budgetedPg), on its own: no request, no retry, so what the
    // pool hands out is seen directly.
    pool = new budgetedPg.Pool({ connectionString: proxy.wrap(url, app), max: 4 });
    pool.on('error', () => undefined);
  });
  afterAll(async () => {
    proxy.release();
    await pool.end().catch(() => undefined);
    await admin.end();
    await proxy.stop();
  });

  /** The pids of the pool's sessions, polled until `until` holds. */
  async function backends(until: (pids: number[]) => boolean): Promise<number[]> {
    for (let i = 0; i < 200; i++) {
      const { rows } = await admin.query(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY backend_start`, [app]);
      const pids = rows.map((r: { pid: number }) => r.pid);
      if (until(pids)) return pids;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('the pool sessions never reached the expected state');
  }

  it('a session whose start-up answer arrives after a statement lost its connection is closed, and a new one handed out', async () => {
    // A: a session in use; its statement will find the database lost.
    const a = await pool.connect();
    a.on('error', () => undefined);
    const [pidA] = (await a.query('SELECT pg_backend_pid() AS pid')).rows.map((r: { pid: number }) => r.pid);
    const running = a.query('SELECT pg_sleep(30)').then(
      () => null,
      (err: unknown) => err,
    );

    // C: a session the server has started (its backend exists) while its client does not know it yet.
    proxy.holdNew();
    const pending = pool.connect();
    const [pidC] = (await backends((pids) => pids.length === 2)).filter((pid) => pid !== pidA);

    // The failure: the server ends A's session under its statement (57P01, as a fast shutdown does to every one).
    await admin.query('SELECT pg_terminate_backend($1)', [pidA]);
    expect(await running).toMatchObject({ code: '57P01' });
    a.release(true);

    // C's start-up answer reaches the client after the failure.
    proxy.release();
    const c = await pending;
    try {
      c.on('error', () => undefined);
      // The server that failed ends C too (its shutdown, or its postmaster's death, reaches every session).
      await admin.query('SELECT pg_terminate_backend($1)', [pidC]);
      await backends((pids) => !pids.includes(pidC));
      // Handed C, the first statement would lose its connection (57P01): what a read's retry met in a switchover.
      const answer = await c.query('SELECT pg_backend_pid() AS pid').then(
        (r) => ({ pid: r.rows[0].pid as number }),
        (err: { code?: string; message?: string }) => ({ failed: err.code ?? err.message }),
      );
      expect(answer).toEqual({ pid: expect.any(Number) });
      expect([pidA, pidC]).not.toContain((answer as { pid: number }).pid);
    } finally {
      c.release();
    }
  });
  it('a session lost between two statements starts a new generation: an idle session of the same dead server is not handed out', async () => {
    const pidOf = async (c: { query(text: string): Promise<{ rows: { pid: number }[] }> }) => (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const a = await pool.connect();
    const b = await pool.connect();
    const [pidA, pidB] = [await pidOf(a), await pidOf(b)];
    b.release();
    // A is held between two statements, as TypeORM's query runner holds it (its next statement would throw
    // QueryRunnerAlreadyReleasedError, which no statement of the pg client reports).
    const lost = new Promise<Error>((resolve) => a.once('error', resolve));
    a.on('error', () => undefined);
    // The server dies (a kill -9 of its postmaster ends every session): B, idle in the pool, has not heard of it yet.
    proxy.holdConnection((b as unknown as { connection: { stream: net.Socket } }).connection.stream.localPort!);
    await admin.query('SELECT pg_terminate_backend($1)', [pidB]);
    await admin.query('SELECT pg_terminate_backend($1)', [pidA]);
    const error = await lost;
    expect(databaseUnavailable(error)).toMatchObject({ cause: 'connection-lost' });
    a.release(error);

    // What the read retry does next: a connection from the pool, and B's news arrives.
    const c = await pool.connect();
    proxy.release();
    try {
      c.on('error', () => undefined);
      await backends((pids) => !pids.includes(pidB));
      const answer = await c.query('SELECT pg_backend_pid() AS pid').then(
        (r) => ({ pid: r.rows[0].pid as number }),
        (err: { code?: string; message?: string }) => ({ failed: err.code ?? err.message }),
      );
      // Handed B, the statement would find it lost (57P01): what a GET's retry met after a kill -9.
      expect(answer).toEqual({ pid: expect.any(Number) });
      expect([pidA, pidB]).not.toContain((answer as { pid: number }).pid);
    } finally {
      c.release();
    }
  });
});
