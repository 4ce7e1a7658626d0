import * as fs from 'fs';
import * as path from 'path';
import { ORGANISATION_AUDIT_EVENT_TYPES, PLATFORM_AUDIT_EVENT_TYPES } from '../../src/audit/audit-event-types';
import { WEBHOOK_EVENT_TYPES, WEBHOOK_ONLY_EVENT_TYPES } from '../../src/webhooks/webhook-outbox';

/** Upper snake case names ending in an action: what an audit type looks like in the sources. */
const EVENT_LIKE = /'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:CREATED|UPDATED|DELETED|ADDED|REMOVED|REVOKED|PROVISIONED|CANCELLED|STARTED|STOPPED|STARTING|STOPPING|DELETING|REQUESTED|RECEIVED|ROTATED|REDELIVERED|DISABLED|VIOLATED|CHANGED|REGISTERED|RECOVERED|FAILED|UPGRADED|COMPLETED|EXPIRED|BLOCKED|UNBLOCKED|RESCHEDULED|SCHEDULED|NOTIFIED|ANNOUNCED|FIRING|RESOLVED|PING|PINGED))'/g;

/** Literals of that shape that are not audit types: provisioning steps and upgrade statuses. */
const NOT_EVENT_TYPES = new Set(['OIDC_PROVISIONED', 'INITIAL_NODE_POOLS_PROVISIONED', 'INITIAL_ADDONS_PROVISIONED', 'SCHEDULED_NOTIFIED']);

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('audit and webhook event types', () => {
  it('list every type the sources record, so subscribers may name it', () => {
    const known = new Set<string>([...ORGANISATION_AUDIT_EVENT_TYPES, ...PLATFORM_AUDIT_EVENT_TYPES, ...WEBHOOK_ONLY_EVENT_TYPES]);
    const missing = new Set<string>();
    for (const file of sources(path.resolve(__dirname, '../../src'))) {
      for (const m of fs.readFileSync(file, 'utf8').matchAll(EVENT_LIKE)) {
        if (!known.has(m[1]) && !NOT_EVENT_TYPES.has(m[1])) missing.add(`${m[1]} (${path.relative(path.resolve(__dirname, '../..'), file)})`);
      }
    }
    expect([...missing]).toEqual([]);
  });

  it('offer subscribers the organisation types and the webhook-only ones, sorted, and no platform-only type', () => {
    expect(WEBHOOK_EVENT_TYPES).toEqual([...WEBHOOK_EVENT_TYPES].sort());
    expect(WEBHOOK_EVENT_TYPES).toEqual(expect.arrayContaining(['CLUSTER_CREATED', 'SCHEDULED_CLUSTER_UPGRADE_FAILED', 'ALERT_FIRING', 'CLUSTER_POLICY_VIOLATED']));
    for (const t of PLATFORM_AUDIT_EVENT_TYPES) expect(WEBHOOK_EVENT_TYPES).not.toContain(t);
  });
});
