import * as net from 'net';

/** The CommandComplete message's tag of a COMMIT, as PostgreSQL sends it. */
const COMMIT_COMPLETE = Buffer.from('COMMIT\0');

/** A TCP proxy in front of PostgreSQL that a test can cut and restore, to simulate an outage. */
export class TcpProxy {
  private server?: net.Server;
  private sockets = new Set<net.Socket>();
  private down = false;
  private frozen = false;
  private commitTrap = false;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    await this.listen(0);
  }

  private async listen(port: number): Promise<void> {
    this.server = net.createServer((client) => {
      if (this.down) {
        client.destroy();
        return;
      }
      const upstream = net.connect(this.targetPort, this.targetHost);
      this.sockets.add(client);
      this.sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.on('data', (chunk: Buffer) => {
        // The server's "COMMIT" command tag: the transaction is durable, and its client is never told.
        if (this.commitTrap && chunk.includes(COMMIT_COMPLETE)) {
          this.commitTrap = false;
          drop();
          return;
        }
        if (!client.write(chunk)) upstream.pause();
      });
      client.on('drain', () => upstream.resume());
      if (this.frozen) {
        client.pause();
        upstream.pause();
      }
    });
    await new Promise<void>((r) => this.server!.listen(port, '127.0.0.1', r));
    this.port = (this.server!.address() as net.AddressInfo).port;
  }

  /** Drops every open connection and refuses new ones. */
  cut(): void {
    this.down = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  /**
   * Arms a one-shot trap: the next connection on which the server reports a COMMIT is dropped before that report
   * reaches the client. The transaction committed; the client sees its connection die during COMMIT.
   */
  dropAtNextCommit(): void {
    this.commitTrap = true;
  }

  /** Drops every open connection and keeps accepting new ones: what a backend killed by a failover looks like. */
  dropConnections(): void {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  /** Drops every open connection and stops listening, so new connections are refused (ECONNREFUSED). */
  async refuse(): Promise<void> {
    this.cut();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((r) => server.close(() => r()));
  }

  /** Keeps every connection open but forwards nothing, like a PostgreSQL stopped with SIGSTOP. */
  freeze(): void {
    this.frozen = true;
    for (const s of this.sockets) s.pause();
  }

  /** Ends cut(), freeze() and refuse() (listening again on the same port after refuse()). */
  async restore(): Promise<void> {
    if (!this.server && this.port) await this.listen(this.port);
    this.down = false;
    this.frozen = false;
    for (const s of this.sockets) s.resume();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  /** Rewrites a database URL to go through this proxy. */
  wrap(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }
}
