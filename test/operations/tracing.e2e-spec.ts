import { ChildProcess, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as path from 'path';
import { freePort } from '../../src/common/free-port';
import { ADMIN_TOKEN, createTestDatabase, TEST_ENCRYPTION_KEY } from '../support/test-app';

/**
 * Issue 39, item 5: with OTEL_EXPORTER_OTLP_ENDPOINT set, the service sends its spans over OTLP/HTTP to a receiver
 * this test runs: the request's span continues the caller's W3C traceparent, its SQL statements are its children, the
 * background passes have spans, and log lines written inside the request carry its trace_id.
 */

const ROOT = path.resolve(__dirname, '../..');

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

/** An OTLP/HTTP receiver (JSON encoding): every span posted to /v1/traces. */
async function otlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; hooks: http.IncomingHttpHeaders[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  /** The headers of webhook deliveries sent to /hook (the same server plays the webhook receiver). */
  const hooks: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      } else if (req.url === '/hook') {
        hooks.push(req.headers);
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, hooks, close: () => new Promise((r) => server.close(() => r())) };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('traces', () => {
  it("continue the caller's traceparent, with SQL, background passes and trace_id in the log lines", async () => {
    const receiver = await otlpReceiver();
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DATABASE_URL: await createTestDatabase(),
      CREDENTIALS_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
      BACKGROUND_JOBS_ENABLED: 'true',
      DEMO_DATA: 'true',
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    const child: ChildProcess = spawn(process.execPath, ['-r', '@swc-node/register', 'src/main.ts'], { cwd: ROOT, env });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await until(() => stdout.includes('Swagger UI:') || child.exitCode !== null, 'the service to start');
      if (child.exitCode !== null) throw new Error(`exited:\n${stdout}\n${stderr}`);
      const traceId = randomBytes(16).toString('hex');
      const parentId = randomBytes(8).toString('hex');
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/memberships`, {
        headers: { Authorization: `Token ${ADMIN_TOKEN}`, traceparent: `00-${traceId}-${parentId}-01`, 'X-Request-Id': 'traced-request-1' },
      });
      expect(res.status).toBe(200);
      await until(() => receiver.spans.some((s) => s.traceId === traceId && s.kind === 2), 'the request span');
      const server = receiver.spans.find((s) => s.traceId === traceId && s.kind === 2)!;
      expect(server.parentSpanId).toBe(parentId);
      // Its SQL (the token lookup, the memberships) in the same trace, below it.
      await until(() => receiver.spans.some((s) => s.traceId === traceId && s.kind === 3), 'a SQL span');
      const sql = receiver.spans.filter((s) => s.traceId === traceId && s.kind === 3);
      expect(sql.some((s) => (s.attributes ?? []).some((a) => a.key === 'db.system' || a.key === 'db.system.name'))).toBe(true);
      // A background pass, a root of its own.
      await until(() => receiver.spans.some((s) => s.name.startsWith('background pass ')), 'a background pass span');
      // The request's log line carries the trace id.
      const lines = stdout
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l) as { reqId?: string; trace_id?: string; msg: string });
      expect(lines.find((l) => l.reqId === 'traced-request-1' && l.msg === 'request completed')).toMatchObject({ trace_id: traceId });
      // A webhook delivery (by the background loop) sends traceparent: the trace of its client span.
      const auth = { Authorization: `Token ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' };
      const hook = await fetch(`http://127.0.0.1:${port}/api/v1/orgs/acme/webhooks`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ url: `${receiver.url}/hook`, eventTypes: ['WEBHOOK_PING'] }),
      });
      expect(hook.status).toBe(200);
      const { identity } = (await hook.json()) as { identity: string };
      expect((await fetch(`http://127.0.0.1:${port}/api/v1/orgs/acme/webhooks/${identity}/ping`, { method: 'POST', headers: auth })).status).toBe(200);
      await until(() => receiver.hooks.length > 0, 'the webhook delivery');
      const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(String(receiver.hooks[0].traceparent));
      expect(sent).not.toBeNull();
      await until(() => receiver.spans.some((s) => s.spanId === sent![2]), 'the delivery span');
      const delivery = receiver.spans.find((s) => s.spanId === sent![2])!;
      expect({ traceId: delivery.traceId, kind: delivery.kind }).toEqual({ traceId: sent![1], kind: 3 });
      // No spans for probes and scrapes.
      await fetch(`http://127.0.0.1:${port}/health/ready`);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(receiver.spans.filter((s) => (s.attributes ?? []).some((a) => a.key === 'url.path' && JSON.stringify(a.value).includes('/health')))).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await receiver.close();
    }
  }, 240_000);
});
