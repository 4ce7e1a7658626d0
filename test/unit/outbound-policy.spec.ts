import * as http from 'http';
import type { AddressInfo } from 'net';
import { loadConfig } from '../../src/config/app-config';
import { forbiddenAddressReason, OutboundPolicy, OutboundPolicyError, parseOutboundUrl } from '../../src/common/outbound-policy';
import { ValidationFailedException } from '../../src/common/errors';

const policy = (allowPrivate: boolean, timeout = '1000') =>
  new OutboundPolicy(loadConfig({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: String(allowPrivate), OUTBOUND_TIMEOUT_MS: timeout }));

describe('outbound policy: addresses', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['fe80::1', 'linkLocal'],
    ['fd00::1', 'uniqueLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'linkLocal'],
  ])('%s is refused (%s)', (ip, range) => {
    expect(forbiddenAddressReason(ip)).toBe(range);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111'])('%s is public', (ip) => {
    expect(forbiddenAddressReason(ip)).toBeNull();
  });

  it('refuses IPv6 outside global unicast and invalid input', () => {
    expect(forbiddenAddressReason('1::1')).not.toBeNull();
    expect(forbiddenAddressReason('not-an-ip')).toBe('invalid');
  });
});

describe('outbound policy: URLs', () => {
  it.each([
    ['file:///etc/passwd', 'SCHEME'],
    ['ftp://example.com/', 'SCHEME'],
    ['gopher://example.com/', 'SCHEME'],
    ['javascript:alert(1)', 'SCHEME'],
    ['http://user:pass@example.com/', 'USERINFO'],
    ['http://user@example.com/', 'USERINFO'],
    ['not a url', 'SYNTAX'],
    ['', 'SYNTAX'],
  ])('%s is refused (%s)', (url, code) => {
    try {
      parseOutboundUrl(url);
      throw new Error('accepted');
    } catch (e) {
      expect(e).toBeInstanceOf(OutboundPolicyError);
      expect((e as OutboundPolicyError).code).toBe(code);
    }
  });

  it('refuses URLs longer than 2048 characters', () => {
    expect(() => parseOutboundUrl('http://' + 'a'.repeat(2100) + '.com')).toThrow(/at most 2048/);
  });

  it('accepts http and https', () => {
    expect(parseOutboundUrl('https://dash.example.com/base').hostname).toBe('dash.example.com');
    expect(parseOutboundUrl('http://[2606:4700::1]:8080/').port).toBe('8080');
  });

  it('checks every resolved address, and refuses names resolving to internal addresses', async () => {
    const p = policy(false);
    p.resolver = async (host) =>
      host === 'mixed.example'
        ? [{ address: '93.184.216.34', family: 4 }, { address: '10.1.2.3', family: 4 }]
        : [{ address: '93.184.216.34', family: 4 }];
    await expect(p.check('https://public.example/')).resolves.toMatchObject({ addresses: [{ address: '93.184.216.34' }] });
    await expect(p.check('https://mixed.example/')).rejects.toMatchObject({ code: 'ADDRESS' });
    await expect(p.check('http://169.254.169.254/latest/meta-data/')).rejects.toMatchObject({ code: 'ADDRESS' });
    await expect(p.check('http://[::1]:8080/')).rejects.toMatchObject({ code: 'ADDRESS' });
    await expect(p.check('http://0x7f000001/')).rejects.toMatchObject({ code: 'ADDRESS' }); // WHATWG URL normalises to 127.0.0.1
  });

  it('resolves localhost with the system resolver and refuses it', async () => {
    await expect(policy(false).check('http://localhost:8080/')).rejects.toMatchObject({ code: 'ADDRESS' });
  });

  it('reports an unresolvable host', async () => {
    const p = policy(false);
    p.resolver = async () => {
      throw new Error('ENOTFOUND');
    };
    await expect(p.check('https://nowhere.invalid/')).rejects.toMatchObject({ code: 'RESOLUTION' });
  });

  it('assertAllowedWhenSaved checks a URL without DNS: a host name is not resolved, an internal literal or localhost is refused', async () => {
    const p = policy(false);
    let lookups = 0;
    p.resolver = async () => {
      lookups++;
      throw new Error('no DNS here');
    };
    expect((await p.assertAllowedWhenSaved('url', 'https://hooks.example.com/events')).hostname).toBe('hooks.example.com');
    expect(lookups).toBe(0);
    for (const url of ['http://127.0.0.1/', 'http://[::1]/', 'http://10.1.2.3/x']) {
      const err = await p.assertAllowedWhenSaved('url', url).catch((e) => e);
      expect(err).toBeInstanceOf(ValidationFailedException);
      expect(err.fieldErrors[0].message).toMatch(/internal address/);
    }
    const bad = await p.assertAllowedWhenSaved('url', 'ftp://hooks.example.com/').catch((e) => e);
    expect(bad).toBeInstanceOf(ValidationFailedException);
  });

  it('assertAllowed turns a refusal into a 400 naming the field', async () => {
    const err = await policy(false).assertAllowed('url', 'http://127.0.0.1/').catch((e) => e);
    expect(err).toBeInstanceOf(ValidationFailedException);
    expect(err.fieldErrors[0].field).toBe('url');
    expect(err.fieldErrors[0].message).toMatch(/internal address/);
  });

  it('OUTBOUND_ALLOW_PRIVATE_NETWORKS lifts the address rule only', async () => {
    const p = policy(true);
    await expect(p.check('http://127.0.0.1/')).resolves.toBeDefined();
    await expect(p.check('file:///etc/passwd')).rejects.toMatchObject({ code: 'SCHEME' });
    await expect(p.check('http://a:b@127.0.0.1/')).rejects.toMatchObject({ code: 'USERINFO' });
  });
});

describe('outbound policy: requests', () => {
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/ok') return res.end('fine');
      if (req.url === '/big') return res.end(Buffer.alloc(2 * 1024 * 1024, 97));
      if (req.url === '/redirect') {
        res.statusCode = 302;
        res.setHeader('location', 'http://169.254.169.254/');
        return res.end();
      }
      // '/hang': never answers
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('performs a bounded request when allowed', async () => {
    const res = await policy(true).request(`${base}/ok`);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe('fine');
  });

  it('does not follow redirects', async () => {
    const res = await policy(true).request(`${base}/redirect`);
    expect(res.status).toBe(302);
  });

  it('stops at the response size bound', async () => {
    await expect(policy(true).request(`${base}/big`, { maxBytes: 1024 })).rejects.toMatchObject({ code: 'TOO_LARGE' });
  });

  it('stops at the timeout', async () => {
    // /hang never answers: the TIMEOUT is the outbound bound (200 ms here) firing, whatever the machine's load.
    await expect(policy(true, '200').request(`${base}/hang`)).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('refuses loopback at call time when private networks are not allowed', async () => {
    await expect(policy(false).request(`${base}/ok`)).rejects.toMatchObject({ code: 'ADDRESS' });
    const p = policy(false);
    // A name that resolves to loopback only at call time (DNS rebinding) is refused by the connect-time lookup too.
    let calls = 0;
    p.resolver = async () => (++calls === 1 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    await expect(p.request(`http://rebind.example:${new URL(base).port}/ok`)).rejects.toMatchObject({ code: 'ADDRESS' });
    expect(calls).toBe(2);
  });
});

describe('outbound policy: OUTBOUND_ALLOWLIST', () => {
  const listed = (allowlist: string) =>
    new OutboundPolicy(loadConfig({ OUTBOUND_ALLOW_PRIVATE_NETWORKS: 'false', OUTBOUND_ALLOWLIST: allowlist }));

  it('lifts the private-address rule for listed hosts, host:port and CIDRs only', async () => {
    const p = listed('hooks.internal,127.0.0.1:8443,10.20.0.0/16');
    p.resolver = async (host) => [{ address: host === 'hooks.internal' ? '10.1.2.3' : '10.9.9.9', family: 4 }];
    await expect(p.check('http://hooks.internal/x')).resolves.toBeDefined();
    await expect(p.check('http://other.internal/x')).rejects.toMatchObject({ code: 'ADDRESS' });
    await expect(p.check('https://127.0.0.1:8443/')).resolves.toBeDefined();
    await expect(p.check('https://127.0.0.1:8444/')).rejects.toMatchObject({ code: 'ADDRESS' });
    await expect(p.check('http://10.20.5.6/')).resolves.toBeDefined();
    await expect(p.check('http://10.21.5.6/')).rejects.toMatchObject({ code: 'ADDRESS' });
  });

  it('keeps the cloud metadata address refused unless it is listed exactly', async () => {
    const p = listed('meta.internal,169.254.0.0/16');
    p.resolver = async () => [{ address: '169.254.169.254', family: 4 }];
    await expect(p.check('http://meta.internal/')).rejects.toMatchObject({ code: 'ADDRESS' });
    await expect(p.check('http://169.254.169.254/')).rejects.toMatchObject({ code: 'ADDRESS' });
    await expect(p.check('http://169.254.1.1/')).resolves.toBeDefined();
    await expect(listed('169.254.169.254').check('http://169.254.169.254/')).resolves.toBeDefined();
  });

  it('refuses an unreadable entry at start-up', () => {
    expect(() => listed('not a host!')).toThrow(/OUTBOUND_ALLOWLIST/);
    expect(() => listed('10.0.0.0/99')).toThrow(/OUTBOUND_ALLOWLIST/);
  });
});
