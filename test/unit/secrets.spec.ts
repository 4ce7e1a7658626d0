import 'reflect-metadata';
import { parse } from 'yaml';
import {
  keepStoredSecret,
  looksSecret,
  mayReadSecret,
  presentSecret,
  redactForRecord,
  Secret,
  secretReaderOf,
  secretsOf,
} from '../../src/common/secret-fields';
import { redactUrlSecrets, redactUrlsInText, urlHasSecrets } from '../../src/common/secret-text';
import { redactAlertingSecrets, restoreAlertingSecrets } from '../../src/observability/alerting-secrets';
import { ALERTMANAGER_SECRET_PATHS, UNKNOWN_INTEGRATION_PUBLIC_KEYS } from '../../src/observability/alertmanager-secret-paths';

describe('URL credentials', () => {
  it.each([
    ['https://hooks.example.com/x?token=abc&team=ops', 'https://hooks.example.com/x?token=M&team=M'],
    ['https://user:pw@hooks.example.com/x', 'https://M@hooks.example.com/x'],
    ['https://hooks.example.com/x#access_token=abc', 'https://hooks.example.com/x#M'],
    ['https://hooks.example.com/x?bare&empty=', 'https://hooks.example.com/x?M&empty='],
    ['https://hooks.example.com/x', 'https://hooks.example.com/x'],
    ['not a url?token=x', 'not a url?token=x'],
  ])('%s -> %s', (url, redacted) => {
    expect(redactUrlSecrets(url, 'M')).toBe(redacted);
    expect(urlHasSecrets(url)).toBe(url !== redacted && redacted.includes('M'));
  });

  it('redacts URLs inside text, and leaves text without URLs alone', () => {
    expect(redactUrlsInText('alice sent a ping to webhook https://h.example/a?token=s3cr3t, twice')).toBe(
      'alice sent a ping to webhook https://h.example/a?token=[redacted] twice',
    );
    expect(redactUrlsInText('alice created environment production')).toBe('alice created environment production');
  });
});

class Inner {
  @Secret({ readableFrom: 'MEMBER' }) clientSecret: string;
}
class Outer {
  @Secret() apiToken: string;
  @Secret({ kind: 'map', readableFrom: 'ADMIN', publicKeys: ['channel'] }) config: Record<string, string>;
  @Secret({ kind: 'url', readableFrom: 'ADMIN' }) url: string;
}
class Child extends Outer {
  @Secret({ shownOnce: true }) secret: string;
}

describe('the secret declaration', () => {
  const reader = (role: 'OWNER' | 'ADMIN' | 'MEMBER' | 'VIEWER' | null, readOnly = false) => ({ role, readOnly });

  it('collects own and inherited declarations', () => {
    expect([...secretsOf(Child).keys()].sort()).toEqual(['apiToken', 'config', 'secret', 'url']);
    expect([...secretsOf(Inner).keys()]).toEqual(['clientSecret']);
  });

  it('reads the member role and the token kind of a request; a platform administrator outside the organisation has no role', () => {
    expect(secretReaderOf({ organisationContext: { member: { role: 'ADMIN' } }, user: { token: { type: 'READ_ONLY' } } })).toEqual(reader('ADMIN', true));
    expect(secretReaderOf({ organisationContext: { member: null }, user: { token: { type: 'FULL_ACCESS' } } })).toEqual(reader(null));
    expect(secretReaderOf({})).toEqual(reader(null));
  });

  it('answers a secret in clear from its role on, never to READ_ONLY tokens, never when write-only', () => {
    const member = secretsOf(Inner).get('clientSecret')!.options;
    expect(mayReadSecret(member, reader('MEMBER'))).toBe(true);
    expect(mayReadSecret(member, reader('OWNER'))).toBe(true);
    expect(mayReadSecret(member, reader('VIEWER'))).toBe(false);
    expect(mayReadSecret(member, reader('OWNER', true))).toBe(false);
    expect(mayReadSecret(member, reader(null))).toBe(false);
    expect(mayReadSecret(secretsOf(Outer).get('apiToken')!.options, reader('OWNER'))).toBe(false);
    expect(mayReadSecret(secretsOf(Child).get('secret')!.options, reader(null, true))).toBe(true);
  });

  it('shows the placeholder by kind: a value whole, a map per secret key, a URL per credential part', () => {
    const d = secretsOf(Child);
    const viewer = reader('VIEWER');
    expect(presentSecret(d.get('apiToken')!.options, 't0k', viewer)).toBe('<secret>');
    expect(presentSecret(d.get('apiToken')!.options, '', viewer)).toBe('');
    expect(presentSecret(d.get('config')!.options, { channel: '#ops', apiKey: 'k' }, viewer)).toEqual({ channel: '#ops', apiKey: '<secret>' });
    expect(presentSecret(d.get('url')!.options, 'https://h.example/x?token=t', viewer)).toBe('https://h.example/x?token=<secret>');
    expect(presentSecret(d.get('url')!.options, 'https://h.example/x?token=t', reader('ADMIN'))).toBe('https://h.example/x?token=t');
  });

  it('keeps the stored value where the placeholder comes back, and names placeholders with nothing stored', () => {
    const d = secretsOf(Child);
    expect(keepStoredSecret(d.get('apiToken')!.options, 'apiToken', '<secret>', 'old')).toEqual({ value: 'old', missing: [] });
    expect(keepStoredSecret(d.get('apiToken')!.options, 'apiToken', '<secret>', null)).toEqual({ value: '<secret>', missing: ['apiToken'] });
    expect(keepStoredSecret(d.get('config')!.options, 'config', { channel: '#a', apiKey: '<secret>', token: '<secret>' }, { apiKey: 'k' })).toEqual({
      value: { channel: '#a', apiKey: 'k', token: '<secret>' },
      missing: ['config.token'],
    });
    const url = 'https://h.example/x?token=t';
    expect(keepStoredSecret(d.get('url')!.options, 'url', 'https://h.example/x?token=<secret>', url)).toEqual({ value: url, missing: [] });
    expect(keepStoredSecret(d.get('url')!.options, 'url', 'https://h.example/y?token=<secret>', url).missing).toEqual(['url']);
  });

  it('redacts records by declaration and by name, keeping audit {old, new} shapes, public map keys and URL hosts', () => {
    expect(
      redactForRecord({
        apiToken: { old: null, new: 't0k' },
        config: { old: {}, new: { channel: '#ops', apiKey: 'k' } },
        url: { old: 'https://h.example/x?token=a', new: null },
        clientSecret: 's',
        nested: { password: 'p', note: 'see https://u:p@h.example/' },
        secretRotatedAt: '2026-11-23T00:00:00Z',
      }),
    ).toEqual({
      apiToken: { old: null, new: '[redacted]' },
      config: { old: {}, new: { channel: '#ops', apiKey: '[redacted]' } },
      url: { old: 'https://h.example/x?token=[redacted]', new: null },
      clientSecret: '[redacted]',
      nested: { password: '[redacted]', note: 'see https://[redacted]@h.example/' },
      secretRotatedAt: '2026-11-23T00:00:00Z',
    });
    expect(redactForRecord({ annotations: { runbook: 'https://h.example/r?x=1' } }, { urls: false })).toEqual({ annotations: { runbook: 'https://h.example/r?x=1' } });
  });

  it('knows credential-looking names by their ending', () => {
    for (const n of ['password', 'clientSecret', 'accessKeySecret', 'apiToken', 'apiKey', 'api_key', 'privateKey', 'credentials', 'serviceAccountKey'])
      expect(looksSecret(n)).toBe(true);
    for (const n of ['secretRotatedAt', 'previousSecretExpiresAt', 'tokenType', 'keyId', 'kubernetesRole', 'name']) expect(looksSecret(n)).toBe(false);
  });
});

/** A document with a distinct value at every declared secret place (one receiver per integration type). */
function documentWithEverySecret(): { text: string; values: string[] } {
  const root: Record<string, unknown> = { route: { receiver: 'r0' } };
  const values: string[] = [];
  let n = 0;
  const receivers = new Map<string, Record<string, unknown>>();
  const set = (obj: Record<string, unknown>, steps: string[]) => {
    let at: Record<string, unknown> = obj;
    for (const [i, s] of steps.entries()) {
      const key = s === '*' ? 'X-Any' : s;
      if (i === steps.length - 1) {
        const v = `sv-${++n}-x`;
        values.push(v);
        at[key] = v;
      } else at = (at[key] ??= {}) as Record<string, unknown>;
    }
  };
  for (const p of ALERTMANAGER_SECRET_PATHS) {
    const steps = p.split('.');
    if (steps[0] === 'global') set(root, steps);
    else {
      const type = steps[2];
      if (!receivers.has(type)) receivers.set(type, { name: `r${receivers.size}`, [type]: [{}] });
      set((receivers.get(type)![type] as Record<string, unknown>[])[0], steps.slice(4));
    }
  }
  root.receivers = [...receivers.values()];
  return { text: JSON.stringify(root), values };
}

describe('Alertmanager secrets', () => {
  it('covers every receiver integration, http_config, sigv4, email and global', () => {
    const types = new Set(ALERTMANAGER_SECRET_PATHS.filter((p) => p.startsWith('receivers.')).map((p) => p.split('.')[2]));
    expect(types.size).toBe(18);
    for (const p of [
      'global.smtp_auth_password',
      'global.smtp_auth_secret',
      'global.slack_api_url',
      'global.http_config.oauth2.client_secret',
      'receivers.*.email_configs.*.auth_secret',
      'receivers.*.sns_configs.*.sigv4.secret_key',
      'receivers.*.webhook_configs.*.http_config.http_headers.*.secrets',
      'receivers.*.webhook_configs.*.http_config.basic_auth.password',
      'receivers.*.webhook_configs.*.http_config.authorization.credentials',
      'receivers.*.webex_configs.*.http_config.authorization.credentials',
      'receivers.*.pagerduty_configs.*.routing_key',
      'receivers.*.telegram_configs.*.bot_token',
    ])
      expect(ALERTMANAGER_SECRET_PATHS).toContain(p);
  });

  it('redacts every declared place and restores every one from the stored document', () => {
    const { text, values } = documentWithEverySecret();
    const redacted = redactAlertingSecrets(text);
    for (const v of values) expect(redacted).not.toContain(v);
    expect(redacted.match(/<secret>/g)).toHaveLength(values.length);
    const restored = restoreAlertingSecrets(redacted, text);
    expect(restored.missing).toEqual([]);
    expect(parse(restored.text)).toEqual(parse(text));
  });

  it('redacts lists of header secrets, anchors and merged maps; an unknown integration is secret but for its allow-list', () => {
    const text = [
      'route: {receiver: a}',
      'receivers:',
      '  - name: a',
      '    webhook_configs:',
      '      - &hook',
      '        url: https://h.example/a?token=ww1',
      '        http_config: {http_headers: {X-Key: {values: [shown], secrets: [hh1, hh2]}}}',
      '      - <<: *hook',
      '        max_alerts: 3',
      '    future_configs:',
      '      - {send_resolved: true, max_alerts: 5, api_password: ff1}',
    ].join('\n');
    const redacted = redactAlertingSecrets(text);
    for (const v of ['ww1', 'hh1', 'hh2', 'ff1']) expect(redacted).not.toContain(v);
    expect(redacted).toContain('shown');
    expect(redacted).toContain('send_resolved: true');
    expect(UNKNOWN_INTEGRATION_PUBLIC_KEYS).toContain('max_alerts');
    expect(restoreAlertingSecrets(redacted, text)).toEqual({ text: expect.stringContaining('ww1'), missing: [] });
  });

  it('matches receivers by name, so reordering them keeps their secrets', () => {
    const stored = 'route: {receiver: a}\nreceivers:\n  - name: a\n    slack_configs: [{api_url: https://a.example/1}]\n  - name: b\n    slack_configs: [{api_url: https://b.example/2}]\n';
    const sent = 'route: {receiver: a}\nreceivers:\n  - name: b\n    slack_configs: [{api_url: <secret>}]\n  - name: a\n    slack_configs: [{api_url: <secret>}]\n';
    const { text, missing } = restoreAlertingSecrets(sent, stored);
    expect(missing).toEqual([]);
    expect(parse(text).receivers).toEqual([
      { name: 'b', slack_configs: [{ api_url: 'https://b.example/2' }] },
      { name: 'a', slack_configs: [{ api_url: 'https://a.example/1' }] },
    ]);
  });

  it('shows a document it cannot parse as <secret> whole, and takes that back as the stored document', () => {
    expect(redactAlertingSecrets('route: [\n  password: x')).toBe('<secret>');
    expect(restoreAlertingSecrets('<secret>', 'route: {receiver: a}\n')).toEqual({ text: 'route: {receiver: a}\n', missing: [] });
  });
});
