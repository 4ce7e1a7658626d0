import { auditDiff } from '../../src/audit/audit-diff';
import { activitySentence } from '../../src/activity/activity.service';
import { ValidationFailedException } from '../../src/common/errors';
import { isValidCidr } from '../../src/common/network';
import { addressAllowed } from '../../src/config/address-list';
import { MAX_PAGE_SIZE, toPage, toPageRequest } from '../../src/common/paging';
import { slugify } from '../../src/common/slug';
import { ConfigValidationError, loadConfig } from '../../src/config/app-config';

describe('paging', () => {
  const sortable = { name: 'x.name', createdAt: 'x.created_at' };

  it('defaults to page 0, size 50, no sort', () => {
    expect(toPageRequest({}, sortable)).toEqual({ page: 0, size: 50, offset: 0, sort: [] });
  });

  it('clamps size to 500 and computes the offset', () => {
    const req = toPageRequest({ page: 2, size: 10000 }, sortable);
    expect(req.size).toBe(MAX_PAGE_SIZE);
    expect(req.offset).toBe(1000);
  });

  it('parses repeated sort and refuses unknown properties with 400 naming sort', () => {
    expect(toPageRequest({ sort: ['name,desc', 'createdAt'] }, sortable).sort).toEqual([
      { property: 'name', direction: 'DESC' },
      { property: 'createdAt', direction: 'ASC' },
    ]);
    try {
      toPageRequest({ sort: ['password,asc'] }, sortable);
      fail('expected a validation error');
    } catch (e) {
      expect(e).toBeInstanceOf(ValidationFailedException);
      expect((e as ValidationFailedException).fieldErrors[0].field).toBe('sort');
      expect((e as ValidationFailedException).getStatus()).toBe(400);
    }
  });

  it('builds form A (sort object) and form B (sort array) envelopes', () => {
    const req = toPageRequest({ page: 1, size: 2, sort: ['name,desc'] }, sortable);
    const a = toPage(['c', 'd'], 5, req, 'A');
    expect(a).toEqual({
      content: ['c', 'd'],
      empty: false,
      first: false,
      last: false,
      number: 1,
      numberOfElements: 2,
      pageable: { offset: 2, pageNumber: 1, pageSize: 2, paged: true, sort: { empty: false, sorted: true, unsorted: false }, unpaged: false },
      size: 2,
      sort: { empty: false, sorted: true, unsorted: false },
      totalElements: 5,
      totalPages: 3,
    });
    const b = toPage([], 0, toPageRequest({}, sortable, [{ property: 'name', direction: 'ASC' }]), 'B');
    expect(b.sort).toEqual([{ ascending: true, direction: 'ASC', ignoreCase: false, nullHandling: 'NATIVE', property: 'name' }]);
    expect(b.pageable.sort).toEqual(b.sort);
    expect(b).toMatchObject({ empty: true, first: true, last: true, totalPages: 0, totalElements: 0 });
  });
});

describe('slugify', () => {
  it.each([
    ['Production EU', 'production-eu'],
    ['  --Hello__World!! ', 'hello-world'],
    ['Zürich Café', 'zurich-cafe'],
    ['a'.repeat(80), 'a'.repeat(63)],
    [`${'a'.repeat(62)} b`, 'a'.repeat(62)],
  ])('%s -> %s', (name, slug) => expect(slugify(name)).toBe(slug));
});

describe('auditDiff', () => {
  it('keeps changed properties only and redacts secrets', () => {
    expect(auditDiff({ name: 'a', size: 1, accessKeySecret: 'x' }, { name: 'b', size: 1, accessKeySecret: 'y' })).toEqual({
      name: { old: 'a', new: 'b' },
      accessKeySecret: { old: '[redacted]', new: '[redacted]' },
    });
  });
  it('create has old null, delete has new null', () => {
    expect(auditDiff(null, { name: 'a' })).toEqual({ name: { old: null, new: 'a' } });
    expect(auditDiff({ name: 'a' }, null)).toEqual({ name: { old: 'a', new: null } });
  });
});

describe('activitySentence', () => {
  it('reads like a sentence', () => {
    expect(activitySentence('CLUSTER_CREATED', 'alice', 'production/web')).toBe('alice created cluster production/web');
    expect(activitySentence('NODE_POOL_DELETED', 'bob', 'pool-a')).toBe('bob deleted node pool pool-a');
  });
});

describe('network', () => {
  it('matches addresses against IPs and CIDRs', () => {
    expect(addressAllowed('10.1.2.3', '10.0.0.0/8')).toBe(true);
    expect(addressAllowed('::ffff:10.1.2.3', '10.0.0.0/8')).toBe(true);
    expect(addressAllowed('127.0.0.1', '10.0.0.0/8, 192.168.0.1')).toBe(false);
    expect(addressAllowed('192.168.0.1', '10.0.0.0/8, 192.168.0.1')).toBe(true);
    expect(isValidCidr('10.0.0.0/8')).toBe(true);
    expect(isValidCidr('10.0.0.0/33')).toBe(false);
  });
});

describe('configuration', () => {
  it('reads TRUST_PROXY as false, a hop count or a list of proxy CIDRs', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.0.2.1' }).trustProxy).toEqual(['10.0.0.0/8', '192.0.2.1']);
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(/"true" is refused/);
  });

  it('never echoes the value of a secret variable in a configuration error', () => {
    const secret = 'postgres-secret-password';
    expect(() => loadConfig({ DATABASE_URL: `mysql://u:${secret}@h/db` })).toThrow(/DATABASE_URL \(value not shown\)/);
    try {
      loadConfig({ DATABASE_URL: `mysql://u:${secret}@h/db`, CREDENTIALS_ENCRYPTION_KEY: 'short-secret-key' });
    } catch (e) {
      expect((e as Error).message).not.toContain(secret);
      expect((e as Error).message).not.toContain('short-secret-key');
    }
  });

  it('refuses OIDC_ISSUER_URL without OIDC_AUDIENCE, naming both', () => {
    expect(() => loadConfig({ OIDC_ISSUER_URL: 'https://login.example.com' })).toThrow(ConfigValidationError);
    expect(() => loadConfig({ OIDC_ISSUER_URL: 'https://login.example.com', OIDC_AUDIENCE: '' })).toThrow(
      /OIDC_AUDIENCE is required when OIDC_ISSUER_URL is set/,
    );
    expect(loadConfig({ OIDC_ISSUER_URL: 'https://login.example.com', OIDC_AUDIENCE: 'cms' }).OIDC_AUDIENCE).toBe('cms');
    expect(loadConfig({}).OIDC_ISSUER_URL).toBeUndefined();
  });

  it('applies defaults', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.DATA_DIR).toBe('./.data');
    expect(c.PAT_DEFAULT_TTL_DAYS).toBe(90);
    expect(c.clusterQuotaDefaults).toEqual({ TRIAL: 1, INDIVIDUAL: 3, BUSINESS: 25, ENTERPRISE: 100 });
    expect(c).toMatchObject({ RECONCILE_CONCURRENCY: 16, RECONCILE_LEASE_SECONDS: 60, OBSERVE_EVERY_SECONDS: 60, SIMULATED_DRIVER_LATENCY_MS: 0 });
    expect(loadConfig({ RECONCILE_CONCURRENCY: '256' }).RECONCILE_CONCURRENCY).toBe(256);
    expect(c).toMatchObject({
      AUDIT_RETENTION_DAYS: 400,
      ACTIVITY_RETENTION_DAYS: 90,
      RESOLVED_ALERT_RETENTION_DAYS: 30,
      WEBHOOK_EVENT_RETENTION_DAYS: 30,
      RETENTION_BATCH_SIZE: 5000,
    });
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '0', RETENTION_BATCH_SIZE: '1' })).toMatchObject({ AUDIT_RETENTION_DAYS: 0, RETENTION_BATCH_SIZE: 1 });
  });
  it.each([
    ['PORT', 'eighty'],
    ['TRUST_PROXY', 'maybe'],
    ['TRUST_PROXY', 'true'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['DATABASE_URL', 'mysql://x'],
    ['CREDENTIALS_ENCRYPTION_KEY', 'short'],
    ['LOG_LEVEL', 'loud'],
    ['RECONCILE_CONCURRENCY', '0'],
    ['RECONCILE_CONCURRENCY', '257'],
    ['RECONCILE_CONCURRENCY', 'many'],
    ['RECONCILE_LEASE_SECONDS', '1'],
    ['OBSERVE_EVERY_SECONDS', '0'],
    ['SIMULATED_DRIVER_LATENCY_MS', '-5'],
    ['AUDIT_RETENTION_DAYS', '-1'],
    ['ACTIVITY_RETENTION_DAYS', 'forever'],
    ['RESOLVED_ALERT_RETENTION_DAYS', '1.5'],
    ['WEBHOOK_EVENT_RETENTION_DAYS', '-30'],
    ['RETENTION_BATCH_SIZE', '0'],
    ['EXECUTOR_THREADS', '0'],
    ['EXECUTOR_THREADS', '65'],
    ['EXECUTOR_THREADS', 'two'],
    ['EXECUTOR_TASK_TIMEOUT_MS', '50'],
    ['EXECUTOR_QUEUE_PER_ORGANISATION', '0'],
  ])('a wrong %s stops start-up naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigValidationError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
  });
});
