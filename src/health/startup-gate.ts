import * as http from 'http';

/**
 * The health endpoints while the process starts, before the application listens (src/main.ts): `/health` answers 200
 * (the process is alive, so a start-up probe passes however long it waits), `/health/ready` 503 naming what start-up
 * waits for in the body the readiness check answers (`error.<check>.message`), every other path 503. Above all for a
 * process waiting for the migrations of its release (MIGRATE_AT_START off): the pod stays unready and says why.
 */
export class StartupGate {
  private check = 'startup';
  private message = 'the service is starting';
  private server?: http.Server;

  /** What start-up waits for now: the readiness check's name and its message. */
  waitingFor(check: string, message: string): void {
    this.check = check;
    this.message = message;
  }

  async open(port: number, host: string): Promise<void> {
    const server = http.createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/health') return this.send(res, 200, { status: 'ok' });
      const down = { [this.check]: { status: 'down', message: this.message } };
      if (path === '/health/ready') return this.send(res, 503, { status: 'error', info: {}, error: down, details: down });
      this.send(res, 503, {
        timestamp: new Date().toISOString(),
        status: 503,
        error: 'Service Unavailable',
        message: `The service is not serving yet: ${this.message}`,
        path,
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  /** Stops answering (before the application listens on the same address). */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  private send(res: http.ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
      'cache-control': 'no-store',
      connection: 'close',
      ...(status === 503 ? { 'retry-after': '5' } : {}),
    });
    res.end(text);
  }
}
