import * as http from 'http';
import type { AddressInfo } from 'net';
import { Webhook } from 'standardwebhooks';
import { applyRequest, cloudAccount, clusterSpec, observeRequest } from '../../drivers/conformance/fixtures';
import { DriverCallError } from '../../src/cluster-drivers/driver-call-error';
import type { ClusterObservation } from '../../src/cluster-drivers/driver-contract';
import { HTTP_DRIVER_DEFAULTS, HttpClusterDriver, type DriverCallOutcome } from '../../src/cluster-drivers/http-cluster-driver';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const CANARY = 'canary-7d1f0c9e-credential';

const observation = (identity: string, generation: number | null = 1): ClusterObservation & { identity?: string } => ({
  exists: true,
  observedGeneration: generation,
  state: 'running',
  version: '1.31.2',
  controlPlane: { ready: true, endpoint: `https://${identity}.example.test`, caCertificate: null },
  nodePools: [],
  addons: [],
  conditions: [],
  error: null,
  retryAfterSeconds: null,
});

interface Seen {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A raw HTTP server standing in for a driver: `handle` answers each request. */
async function fakeDriver(handle: (req: Seen, res: http.ServerResponse) => void) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const s = { method: req.method!, path: req.url!, headers: req.headers, body };
      seen.push(s);
      handle(s, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

function driverFor(url: string, extra: Partial<typeof HTTP_DRIVER_DEFAULTS> = {}, now?: () => number) {
  const outcomes: [string, DriverCallOutcome][] = [];
  const driver = new HttpClusterDriver(
    { ...HTTP_DRIVER_DEFAULTS, name: 'test-driver', url, secret: SECRET, ...extra },
    { finished: (_d, op, outcome) => { outcomes.push([op, outcome]); } },
    now,
  );
  return { driver, outcomes };
}

async function failure(p: Promise<unknown>): Promise<DriverCallError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(DriverCallError);
    return e as DriverCallError;
  }
  throw new Error('the call did not fail');
}

describe('HttpClusterDriver', () => {
  it('posts the contract body to /v1/apply signed per Standard Webhooks and answers the observation', async () => {
    const fake = await fakeDriver((s, res) => json(res, 200, observation(JSON.parse(s.body).cluster.identity)));
    try {
      const { driver, outcomes } = driverFor(fake.url + '/');
      const request = applyRequest(clusterSpec(), cloudAccount(CANARY), 'create');
      const answer = await driver.apply(request);
      expect(answer).toEqual(observation(request.cluster.identity));
      const [seen] = fake.seen;
      expect(seen.method).toBe('POST');
      expect(seen.path).toBe('/v1/apply');
      expect(JSON.parse(seen.body)).toEqual(request);
      // The signature verifies with the shared secret over id, timestamp and body; a changed body does not.
      expect(new Webhook(SECRET).verify(seen.body, seen.headers as Record<string, string>)).toEqual(request);
      expect(() => new Webhook(SECRET).verify(seen.body.replace(CANARY, 'x'), seen.headers as Record<string, string>)).toThrow('No matching signature');
      expect(outcomes).toEqual([['apply', 'ok']]);
    } finally {
      await fake.close();
    }
  });

  it('signs the empty body of GET /v1/capabilities and refuses another protocol version', async () => {
    let version = 'v1';
    const fake = await fakeDriver((_s, res) => json(res, 200, { protocolVersion: version, driver: { name: 'x', version: '1' }, cloudProviders: ['aws'], features: [] }));
    try {
      const { driver } = driverFor(fake.url);
      expect((await driver.capabilities()).cloudProviders).toEqual(['aws']);
      expect(fake.seen[0].method).toBe('GET');
      expect(fake.seen[0].path).toBe('/v1/capabilities');
      expect(() => new Webhook(SECRET).verify('', fake.seen[0].headers as Record<string, string>)).not.toThrow();
      version = 'v2';
      const e = await failure(driver.capabilities());
      expect(e.driverError).toMatchObject({ class: 'terminal', code: 'UnsupportedProtocolVersion' });
    } finally {
      await fake.close();
    }
  });

  it("passes a driver's own error through and classes the others (5xx, 429, 401, a redirect retryable; other 4xx terminal)", async () => {
    const answers: [number, unknown][] = [
      [422, { error: { class: 'terminal', code: 'InvalidNodeType', message: 'm9.huge is not a node type of eu-central-1' } }],
      [503, { error: { class: 'retryable', code: 'Throttled', message: 'slow down' } }],
      [502, 'bad gateway'],
      [429, {}],
      [400, { message: 'no' }],
      [401, {}],
      [301, {}],
    ];
    const fake = await fakeDriver((_s, res) => { const [status, body] = answers[fake.seen.length - 1]; json(res, status, body); });
    try {
      // No backoff between the calls: this test is about the classes.
      const { driver } = driverFor(fake.url, { backoffBaseMs: 0, backoffMaxMs: 0 });
      const errors = [];
      for (let i = 0; i < answers.length; i++) errors.push((await failure(driver.apply(applyRequest(clusterSpec(), cloudAccount(CANARY))))).driverError);
      expect(errors.map((e) => [e.class, e.code])).toEqual([
        ['terminal', 'InvalidNodeType'],
        ['retryable', 'Throttled'],
        ['retryable', 'DriverUnavailable'],
        ['retryable', 'DriverUnavailable'],
        ['terminal', 'DriverRejectedRequest'],
        ['retryable', 'DriverAuthenticationFailed'],
        ['retryable', 'DriverProtocolError'],
      ]);
      expect(errors[0].message).toBe('m9.huge is not a node type of eu-central-1');
    } finally {
      await fake.close();
    }
  });

  it('turns an unreachable driver, a timeout and an answer that is not the protocol\'s into retryable errors without the request in them', async () => {
    const fake = await fakeDriver((s, res) => {
      if (s.path === '/v1/observe') return; // never answers
      json(res, 200, { echo: s.body }); // not an observation, and it holds the credentials
    });
    try {
      const { driver, outcomes } = driverFor(fake.url, { timeoutMs: 300, backoffBaseMs: 0, backoffMaxMs: 0 });
      const request = applyRequest(clusterSpec(), cloudAccount(CANARY));
      const protocol = await failure(driver.apply(request));
      expect(protocol.driverError).toMatchObject({ class: 'retryable', code: 'DriverProtocolError' });
      const timeout = await failure(driver.observe(observeRequest(request.cluster, request.cloudAccount)));
      expect(timeout.driverError).toMatchObject({ class: 'retryable', code: 'DriverTimeout' });
      expect(outcomes).toEqual([['apply', 'retryable'], ['observe', 'timeout']]);
      for (const e of [protocol, timeout]) expect(JSON.stringify({ ...e.driverError, stack: e.stack })).not.toContain(CANARY);
    } finally {
      await fake.close();
    }
    const { driver } = driverFor(fake.url);
    const unreachable = await failure(driver.apply(applyRequest(clusterSpec(), cloudAccount(CANARY))));
    expect(unreachable.driverError).toMatchObject({ class: 'retryable', code: 'DriverUnreachable' });
    expect(unreachable.message).toContain('ECONNREFUSED');
  });

  it('holds calls back after a failure, longer after each, and resumes after the first success', async () => {
    let now = 1_000_000;
    let status = 500;
    const fake = await fakeDriver((s, res) => (status === 200 ? json(res, 200, observation('x')) : json(res, status, {})));
    try {
      const { driver, outcomes } = driverFor(fake.url, { backoffBaseMs: 1000, backoffMaxMs: 3000 }, () => now);
      const call = () => driver.observe(observeRequest(clusterSpec()));
      expect((await failure(call())).driverError.code).toBe('DriverUnavailable');
      expect((await failure(call())).driverError.code).toBe('DriverBackingOff'); // not sent
      expect(fake.seen).toHaveLength(1);
      now += 1000;
      expect((await failure(call())).driverError.code).toBe('DriverUnavailable'); // sent: the second failure
      now += 1999;
      expect((await failure(call())).driverError.code).toBe('DriverBackingOff'); // 2 s after the second
      now += 1;
      status = 200;
      await expect(call()).resolves.toMatchObject({ exists: true });
      await expect(call()).resolves.toMatchObject({ exists: true }); // the success ended the backoff
      expect(fake.seen).toHaveLength(4);
      expect(outcomes.map(([, o]) => o)).toEqual(['retryable', 'backoff', 'retryable', 'backoff', 'ok', 'ok']);
    } finally {
      await fake.close();
    }
  });

  it('runs at most maxInFlight calls at once; the others wait for a slot', async () => {
    const held: http.ServerResponse[] = [];
    let concurrent = 0;
    let most = 0;
    const fake = await fakeDriver((_s, res) => {
      concurrent++;
      most = Math.max(most, concurrent);
      held.push(res);
    });
    try {
      const { driver } = driverFor(fake.url, { maxInFlight: 2 });
      const calls = Array.from({ length: 5 }, () => driver.observe(observeRequest(clusterSpec())));
      // Answer the held requests one by one, as they arrive, until all five were answered.
      for (let answered = 0; answered < 5; answered++) {
        while (held.length === 0) await new Promise((r) => setTimeout(r, 5));
        expect(driver.callsInFlight).toBeLessThanOrEqual(2);
        const res = held.shift()!;
        concurrent--;
        json(res, 200, observation('x'));
      }
      await Promise.all(calls);
      expect(most).toBe(2);
      expect(fake.seen).toHaveLength(5);
    } finally {
      await fake.close();
    }
  });

  it('observes many clusters in batches and keeps only the answers for clusters it asked about', async () => {
    const fake = await fakeDriver((s, res) => {
      const { clusters } = JSON.parse(s.body) as { clusters: { cluster: { identity: string } }[] };
      const observations = Object.fromEntries(clusters.map((c) => [c.cluster.identity, observation(c.cluster.identity)]));
      json(res, 200, { observations: { ...observations, 'not-asked': observation('y') } });
    });
    try {
      const { driver } = driverFor(fake.url, { observeBatchSize: 2 });
      const specs = Array.from({ length: 5 }, () => clusterSpec());
      const answer = await driver.observeMany(specs.map((s) => observeRequest(s)));
      expect([...answer.keys()].sort()).toEqual(specs.map((s) => s.identity).sort());
      expect(fake.seen.map((s) => [s.path, JSON.parse(s.body).clusters.length])).toEqual([
        ['/v1/observe-many', 2],
        ['/v1/observe-many', 2],
        ['/v1/observe-many', 1],
      ]);
    } finally {
      await fake.close();
    }
  });
});
