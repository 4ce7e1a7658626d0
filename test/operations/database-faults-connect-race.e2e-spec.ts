import * as net from 'net';
import { Client } from 'pg';
import { budgetedPg } from '../../src/database/database-wait-budget';
import { createTestDatabase } from '../support/test-app';

/**
 * A connection whose opening straddles a failure (begun before a statement found the database lost, ready after it)
 * is a session of the server that failed: in a switchover, a backend that finished its start-up just before the old
 * primary's fast shutdown terminated it; after a `kill -9` of the postmaster, a backend forked before it, which
 * completes its start-up and dies at its first statement ("terminating connection due to unexpected postmaster
 * exit"). The pool must not hand it to what runs after the failure (the read retry), which would lose it while
 * using it (57P01) and answer 503 (docs/adr/0198-connections-begun-before-a-failure-are-not-handed-out.md).
 */

/** The type byte of PostgreSQL's ReadyForQuery message ('Z'), which ends a connection's start-up. */
const READY_FOR_QUERY = 0x5a;

/**
 * A TCP proxy that can hold what the server sends on the connections opened while it holds (their start-up
 * answer), and release it later: a connection begun before a failure whose client learns it is ready after it.
 */
class HandshakeHoldingProxy {
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private holding = false;
  private readonly held: (() => void)[] = [];
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => undefined).on('close', () => {
          client.destroy();
          upstream.destroy();
          this.sockets.delete(s);
        });
      }
      client.pipe(upstream);
      if (!this.holding) {
        upstream.pipe(client);
        return;
      }
      // The start-up (authentication, parameters) goes through; from the server's ReadyForQuery message on, what it
      // sends is held: the backend is started and idle, its client still waits to hear that it is ready.
      let pending = Buffer.alloc(0);
      let holding = false;
      const buffered: Buffer[] = [];
      const hold = (chunk: Buffer) => {
        if (holding) return void buffered.push(chunk);
        pending = Buffer.concat([pending, chunk]);
        let at = 0;
        while (pending.length - at >= 5) {
          const length = pending.readInt32BE(at + 1);
          if (pending[at] === READY_FOR_QUERY) {
            holding = true;
            break;
          }
          if (pending.length - at < 1 + length) break;
          at += 1 + length;
        }
        if (at > 0) client.write(pending.subarray(0, at));
        pending = pending.subarray(at);
        if (holding) buffered.push(pending);
      };
      upstream.on('data', hold);
      this.held.push(() => {
        upstream.off('data', hold);
        for (const chunk of buffered) client.write(chunk);
        if (!holding && pending.length > 0) client.write(pending);
        upstream.pipe(client);
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  /** Connections opened from now on get nothing from the server until release(). */
  hold(): void {
    this.holding = true;
  }

  /** Forwards what was held, and everything after it. */
  release(): void {
    this.holding = false;
    for (const flush of this.held.splice(0)) flush();
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
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

describe('a connection begun before the database was found lost is not handed out after it', () => {
  jest.setTimeout(30_000);
  const app = 'cms-connect-race';
  let url: string;
  let proxy: HandshakeHoldingProxy;
  let admin: Client;
  let pool: InstanceType<typeof budgetedPg.Pool>;

  beforeAll(async () => {
    url = await createTestDatabase();
    const u = new URL(url);
    proxy = new HandshakeHoldingProxy(u.hostname, Number(u.port));
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
    proxy.hold();
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
});
