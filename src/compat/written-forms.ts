import type { DataSource } from 'typeorm';
import { catalogAddonName, ORIGINAL_ADDON_ALIASES } from '../clusters/addon-names';
import { addResponseWarnings } from '../common/field-validation.pipe';
import { retryReadOnce } from '../database/read-retry';

/**
 * Under `/compat` a cluster reads back the way the original client wrote it (ADR 0170). The service keeps its own
 * words (the catalog's add-on names, lower-case profiles, `started`); what an original client wrote in other words
 * is remembered per cluster (table compat_cluster_forms) and answered in those words under `/compat`:
 * - `addons`: the names and the set of the client's last add-on map. A name that stands for a catalog add-on
 *   answers that add-on's current state; a name without a counterpart (dropped at the write, disabled) answers the
 *   value it was sent with; a catalog add-on the client never named is not in its answer.
 * - `podSecurityStandardsProfile`: in the case it was sent (`PRIVILEGED`) while it is still that profile.
 * - `cni`, left out at the create and filled in by the service: answered as left out (null) while it is still the
 *   value the service chose, so a configuration without it shows no change.
 * - `status`: `started` is `running`, the word the original clients wait for.
 * Two names for one add-on in one `/compat` request (the provider merges its default map, in its names, with a state
 * read in another client's names) are not an error there: the catalog's own name wins over the provider's alias,
 * which wins over a camelCase spelling, and a `Warning` header names the one ignored.
 * Its reads run around the handler (before it, or after it before any byte is sent), so one whose connection was lost
 * runs once more on a fresh connection (retryReadOnce), on writes as on reads; its write (`remember`) never does.
 */

type Addon = { enabled?: boolean; customValues?: Record<string, string> };
type AddonMap = Record<string, Addon>;

/** The routes that write a cluster's add-ons or profile. */
const CLUSTER_WRITES = new Set(['POST /api/v1/orgs/:organisationSlug/clusters/:environmentSlug', 'PATCH /api/v1/orgs/:organisationSlug/clusters/:environmentSlug/:clusterSlug']);

export interface WrittenForm {
  addons?: AddonMap;
  podSecurityStandardsProfile?: string;
  /** Fields the create left out, to be filled with the value the service chose. */
  leftOut?: string[];
  /** Fields the request wrote (they are no longer the service's choice). */
  written?: string[];
}

/** Fields of a cluster create that the service fills in when left out, and the original clients leave out. */
const DEFAULTED_FIELDS = ['cni'];

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** How sure a name is of its add-on: the catalog's name, the provider's alias, a camelCase spelling. */
function rank(name: string, catalog: string): number {
  if (name === catalog) return 0;
  return Object.hasOwn(ORIGINAL_ADDON_ALIASES, name) ? 1 : 2;
}

const POOL_REPLACE = 'PUT /api/v1/orgs/:organisationSlug/clusters/:environmentSlug/:clusterSlug/pools/:nodePoolId';

export class WrittenForms {
  constructor(private readonly db: DataSource) {}

  isClusterWrite(method: string, route: string | undefined): boolean {
    return route !== undefined && CLUSTER_WRITES.has(`${method} ${route}`);
  }

  private async catalogAddons(): Promise<Set<string>> {
    const rows: { name: string }[] = await retryReadOnce(() => this.db.query(`SELECT name FROM addons`), 'compat written forms (add-ons)');
    return new Set(rows.map((r) => r.name));
  }

  /**
   * Before the handler: what the request wrote in the client's words, and its add-on map with one name per add-on
   * (the others dropped with a Warning). Answers null when the request writes neither.
   */
  async takeRequest(method: string, body: unknown): Promise<WrittenForm | null> {
    if (!isRecord(body)) return null;
    const form: WrittenForm = {};
    const sent = DEFAULTED_FIELDS.filter((f) => body[f] !== undefined && body[f] !== null && body[f] !== '');
    if (sent.length) form.written = sent;
    if (method === 'POST' && sent.length < DEFAULTED_FIELDS.length) form.leftOut = DEFAULTED_FIELDS.filter((f) => !sent.includes(f));
    if (typeof body.podSecurityStandardsProfile === 'string') form.podSecurityStandardsProfile = body.podSecurityStandardsProfile;
    if (isRecord(body.addons)) {
      const addons = body.addons as AddonMap;
      form.addons = structuredClone(addons);
      const known = await this.catalogAddons();
      const kept = new Map<string, string>();
      const ignored: string[] = [];
      for (const name of Object.keys(addons)) {
        const catalog = catalogAddonName(name, known);
        if (catalog === null) continue;
        const other = kept.get(catalog);
        if (other === undefined) {
          kept.set(catalog, name);
          continue;
        }
        const [keep, drop] = rank(name, catalog) < rank(other, catalog) ? [name, other] : [other, name];
        kept.set(catalog, keep);
        delete addons[drop];
        ignored.push(`addons.${drop} was ignored: addons.${keep} names the same add-on (${catalog})`);
      }
      addResponseWarnings(ignored);
    }
    return form.addons || form.podSecurityStandardsProfile !== undefined || form.leftOut || form.written ? form : null;
  }

  /**
   * The Go client's UpdateNodePool sends its whole create struct with only some fields set: `name: ""`, the
   * booleans it has no value for as Go's `false`, `availabilityZone` and `upgradeStrategy` left out. Under `/compat`
   * such a replacement (recognised by `name: ""`) keeps the pool's values for what Go's zero value cannot tell from
   * "not set": a `false` or missing `autoScaling`, `enableNodeAutoReplacement` and `enableNodeReboots`, and a missing
   * `availabilityZone` and `upgradeStrategy`. A pool that is not found leaves the request alone (the handler answers).
   */
  async completePoolReplace(method: string, route: string | undefined, params: unknown, body: unknown): Promise<void> {
    if (`${method} ${route}` !== POOL_REPLACE || !isRecord(body) || body.name !== '' || !isRecord(params)) return;
    const id = String(params.nodePoolId ?? '');
    const byIdentity = /^[0-9a-f-]{36}$/i.test(id);
    if (!byIdentity && !/^\d{1,18}$/.test(id)) return;
    const [pool] = await retryReadOnce(
      () =>
        this.db.query(
          `SELECT p.auto_scaling AS "autoScaling", p.enable_node_auto_replacement AS "enableNodeAutoReplacement",
                  p.enable_node_reboots AS "enableNodeReboots", p.availability_zone AS "availabilityZone", p.upgrade_strategy AS "upgradeStrategy"
             FROM cluster_node_pools p JOIN clusters c ON c.id = p.cluster_id
             JOIN organisations o ON o.id = c.organisation_id JOIN environments e ON e.id = c.environment_id
            WHERE o.slug = $1 AND e.slug = $2 AND e.deleted_at IS NULL AND c.slug = $3 AND c.deleted_at IS NULL
              AND ${byIdentity ? 'p.identity = $4::uuid' : 'p.id = $4::bigint'}`,
          [params.organisationSlug, params.environmentSlug, params.clusterSlug, id],
        ),
      'compat written forms (pool replace)',
    );
    if (!pool) return;
    for (const k of ['autoScaling', 'enableNodeAutoReplacement', 'enableNodeReboots']) if (body[k] === false || body[k] === undefined) body[k] = pool[k];
    for (const k of ['availabilityZone', 'upgradeStrategy']) if (body[k] === undefined && pool[k] !== null) body[k] = pool[k];
  }

  /** After a successful write: the cluster's written form, the request's parts replacing the stored ones. */
  async remember(cluster: Record<string, unknown>, form: WrittenForm): Promise<void> {
    const defaulted = form.leftOut ? Object.fromEntries(form.leftOut.map((f) => [f, cluster[f] ?? null])) : null;
    await this.db.query(
      `INSERT INTO compat_cluster_forms (cluster_id, addons, pod_security_standards_profile, defaulted, modified_at)
       SELECT id, $2::jsonb, $3, $4::jsonb, now() FROM clusters WHERE identity = $1
       ON CONFLICT (cluster_id) DO UPDATE SET
         addons = COALESCE(EXCLUDED.addons, compat_cluster_forms.addons),
         pod_security_standards_profile = COALESCE(EXCLUDED.pod_security_standards_profile, compat_cluster_forms.pod_security_standards_profile),
         defaulted = COALESCE(EXCLUDED.defaulted, compat_cluster_forms.defaulted) - $5::text[],
         modified_at = now()`,
      [cluster.identity, form.addons ? JSON.stringify(form.addons) : null, form.podSecurityStandardsProfile ?? null, defaulted ? JSON.stringify(defaulted) : null, form.written ?? []],
    );
  }

  /** The clusters in an answer (a cluster, or a page of them): those objects with an identity, status and addons. */
  private clustersIn(payload: unknown): Record<string, unknown>[] {
    const isCluster = (v: unknown): v is Record<string, unknown> =>
      isRecord(v) && typeof v.identity === 'string' && typeof v.status === 'string' && 'addons' in v && 'podSecurityStandardsProfile' in v;
    if (isCluster(payload)) return [payload];
    if (isRecord(payload) && Array.isArray(payload.content)) return payload.content.filter(isCluster);
    return [];
  }

  /** Answers the clusters of a `/compat` answer in the words their client wrote (a copy; the answer may be shared). */
  async answer(payload: unknown): Promise<unknown> {
    const clusters = this.clustersIn(payload);
    if (!clusters.length) return payload;
    const rows: { identity: string; addons: AddonMap | null; profile: string | null; defaulted: Record<string, unknown> | null }[] = await retryReadOnce(
      () =>
        this.db.query(
          `SELECT c.identity, f.addons, f.pod_security_standards_profile AS profile, f.defaulted
             FROM compat_cluster_forms f JOIN clusters c ON c.id = f.cluster_id WHERE c.identity = ANY($1::uuid[])`,
          [clusters.map((c) => c.identity)],
        ),
      'compat written forms (answer)',
    );
    const forms = new Map(rows.map((r) => [r.identity, r]));
    const known = rows.some((r) => r.addons) ? await this.catalogAddons() : new Set<string>();
    const translate = (c: Record<string, unknown>): Record<string, unknown> => {
      const out = { ...c };
      if (out.status === 'started') out.status = 'running';
      const form = forms.get(c.identity as string);
      for (const [field, chosen] of Object.entries(form?.defaulted ?? {})) if (c[field] === chosen) out[field] = null;
      if (form?.profile && typeof c.podSecurityStandardsProfile === 'string' && form.profile.toLowerCase() === c.podSecurityStandardsProfile) {
        out.podSecurityStandardsProfile = form.profile;
      }
      if (form?.addons) {
        const current = (isRecord(c.addons) ? c.addons : {}) as AddonMap;
        const addons: AddonMap = {};
        for (const [name, sent] of Object.entries(form.addons)) {
          const catalog = catalogAddonName(name, known);
          addons[name] = catalog !== null && current[catalog] ? current[catalog] : sent;
        }
        out.addons = addons;
      }
      return out;
    };
    if (clusters[0] === payload) return translate(payload as Record<string, unknown>);
    const page = payload as Record<string, unknown>;
    return { ...page, content: (page.content as unknown[]).map((c) => (clusters.includes(c as Record<string, unknown>) ? translate(c as Record<string, unknown>) : c)) };
  }
}
