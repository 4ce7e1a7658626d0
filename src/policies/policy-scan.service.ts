import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { HttpException, HttpStatus, Injectable } from '@nestjs/common';
import type { ClusterRow } from '../clusters/cluster-read';
import type { ExecutorAdmission } from '../executor/executor';
import { clusterSelect } from '../clusters/cluster-read';
import { Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import type { OrganisationEntity } from '../identity/organisation.entity';
import type { ClusterPolicyEntity } from './cluster-policy.entity';
import { ClusterPoliciesService, PolicyBody } from './cluster-policies.service';
import { policyCovers } from './cluster-policy-enforcer';
import type { PolicyEvaluationResult, PolicyViolation } from './dto/cluster-policy.dto';
import { INPUTS_PER_TASK, PolicyEvaluator, PolicyResult, PolicySource } from './policy-evaluator';
import { PolicyInputs } from './policy-inputs';
import type { PolicyInput, PolicyUserVariable } from './policy-variables';

/** Clusters read, turned into policy inputs and evaluated per step of a scan. */
export const SCAN_BATCH_SIZE = 500;
/** Organisation-wide scans (violations) running at once in one replica; more answer 429. */
export const MAX_CONCURRENT_SCANS = 2;
/** A scan that has not finished after this long stops with 503 (checked between batches). */
export const SCAN_DEADLINE_MS = 120_000;

const yieldEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * "Try before enforcing": a policy body (not saved) evaluated on a page of the organisation's clusters, and the
 * clusters violating a saved policy now. Each cluster is evaluated as an UPDATE that changes nothing (`object` and
 * `oldObject` are the cluster as it is; `request.user` is the caller). Both are admitted by the executor under the
 * organisation before their input is validated or anything is read (PolicyAdmissionInterceptor; 429 beyond its
 * bound); clusters are read in keyset batches of
 * SCAN_BATCH_SIZE and evaluated on the executor in chunks of INPUTS_PER_TASK with the event loop yielded between
 * chunks; a violations page scans the organisation's clusters in scope once (it counts them all), bounded by
 * MAX_CONCURRENT_SCANS and SCAN_DEADLINE_MS.
 */
@Injectable()
export class PolicyScanService {
  private running = 0;

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly policies: ClusterPoliciesService,
    private readonly inputs: PolicyInputs,
    private readonly evaluator: PolicyEvaluator,
  ) {}

  /**
   * One page (form A) of the clusters in the body's scope, each with whether it passes. `admission`: the caller was
   * admitted under the organisation before its body was validated (PolicyAdmissionInterceptor; 429 while it has
   * too many such operations in progress), and is released by it.
   */
  async evaluate(org: OrganisationEntity, body: PolicyBody, query: PageQueryDto, user: PolicyUserVariable, admission: ExecutorAdmission): Promise<Page<PolicyEvaluationResult>> {
    await this.policies.checkBody(org, body, true, admission);
    const req = toPageRequest(query, {});
    const fields = await this.evaluator.objectFields(org.id, [body], admission);
    const envIds = await this.environmentsInScope(org, body);
    const [{ n }] = await this.txHost.tx.query(
      `SELECT count(*)::int AS n FROM clusters c WHERE c.organisation_id = $1 AND c.deleted_at IS NULL AND c.environment_id = ANY($2::bigint[])`,
      [org.id, envIds],
    );
    const results: PolicyEvaluationResult[] = [];
    // The page is read INPUTS_PER_TASK clusters at a time (its first slice at the page's offset, the next ones after
    // the last id), each slice evaluated before the next is read: a page of 500 full cluster rows held for the whole
    // evaluation outlived the young generation, and its garbage made the event loop's collections longer for everyone.
    let after: number | null = null;
    while (results.length < req.size) {
      const limit = Math.min(INPUTS_PER_TASK, req.size - results.length);
      const rows = await this.clusterSlice(org, envIds, fields, { after: after ?? 0, limit, offset: after === null ? req.offset : 0 });
      await this.evaluateRows(org, body, rows, user, fields, admission, (c, env, { passed, message, error }) =>
        results.push({ clusterIdentity: c.identity, clusterSlug: c.slug, environmentSlug: env, passed, message, evaluationError: error }),
      );
      if (rows.length < limit) break;
      after = Number(rows[rows.length - 1].id);
    }
    return toPage(results, n, req, 'A');
  }

  /** One page (form A) of the clusters that violate a saved policy now, in cluster order (`admission`: as for `evaluate`). */
  async violations(org: OrganisationEntity, identity: string, query: PageQueryDto, user: PolicyUserVariable, admission: ExecutorAdmission): Promise<Page<PolicyViolation>> {
    const policy = await this.policies.find(org, identity);
    const req = toPageRequest(query, {});
    if (this.running >= MAX_CONCURRENT_SCANS) {
      throw Object.assign(new HttpException('Too many policy scans are running; retry in a few seconds.', HttpStatus.TOO_MANY_REQUESTS), {
        headers: { 'Retry-After': '5' },
      });
    }
    this.running++;
    try {
      return await this.scan(org, policy, req, user, admission);
    } finally {
      this.running--;
    }
  }

  private async scan(org: OrganisationEntity, policy: ClusterPolicyEntity, req: ReturnType<typeof toPageRequest>, user: PolicyUserVariable, admission: ExecutorAdmission) {
    const started = Date.now();
    const envIds = await this.environmentsInScope(org, policy);
    const fields = await this.evaluator.objectFields(org.id, [policy], admission);
    const page: PolicyViolation[] = [];
    let total = 0;
    let after = 0;
    for (;;) {
      if (Date.now() - started > SCAN_DEADLINE_MS) {
        throw new HttpException(`The violations scan did not finish within ${SCAN_DEADLINE_MS / 1000} s; narrow the policy's scope.`, HttpStatus.SERVICE_UNAVAILABLE);
      }
      const batch = await this.clusterSlice(org, envIds, fields, { after, limit: SCAN_BATCH_SIZE, offset: 0 });
      if (!batch.length) break;
      after = Number(batch[batch.length - 1].id);
      await this.evaluateRows(org, policy, batch, user, fields, admission, (c, env, r) => {
        if (r.passed) return;
        if (total >= req.offset && page.length < req.size) {
          page.push({ clusterIdentity: c.identity, clusterSlug: c.slug, environmentSlug: env, message: r.message ?? policy.message });
        }
        total++;
      });
      if (batch.length < SCAN_BATCH_SIZE) break;
    }
    return toPage(page, total, req, 'A');
  }

  /**
   * Evaluates `policy` on `rows` in chunks of INPUTS_PER_TASK clusters: each chunk's inputs are built and handed to
   * the executor, and the event loop is yielded before the next, so no stretch of this work on the event loop is
   * longer than one chunk's (requests of other organisations are served in between).
   */
  private async evaluateRows(
    org: OrganisationEntity,
    policy: PolicySource,
    rows: ClusterRow[],
    user: PolicyUserVariable,
    fields: Set<string> | null,
    admission: ExecutorAdmission,
    each: (cluster: ClusterRow, environmentSlug: string, result: PolicyResult) => void,
  ): Promise<void> {
    for (let i = 0; i < rows.length; i += INPUTS_PER_TASK) {
      const chunk = rows.slice(i, i + INPUTS_PER_TASK);
      const { inputs, envSlugs } = await this.batchInputs(org, chunk, user, fields);
      const outcomes = await this.evaluator.evaluate(org.id, [policy], inputs, admission);
      chunk.forEach((c, j) => each(c, envSlugs.get(Number(c.environmentId))!, outcomes[j][0]));
      await yieldEventLoop();
    }
  }

  /**
   * The organisation's clusters in these environments after id `after`, in id order: `limit` of them from `offset`,
   * with only the columns the projection `fields` needs (clusterSelect).
   */
  private clusterSlice(
    org: OrganisationEntity,
    envIds: number[],
    fields: Set<string> | null,
    slice: { after: number; limit: number; offset: number },
  ): Promise<ClusterRow[]> {
    return this.txHost.tx.query(
      `SELECT ${clusterSelect(fields)} FROM clusters c
        WHERE c.organisation_id = $1 AND c.deleted_at IS NULL AND c.environment_id = ANY($2::bigint[]) AND c.id > $3
        ORDER BY c.id LIMIT $4 OFFSET $5`,
      [org.id, envIds, slice.after, slice.limit, slice.offset],
    );
  }

  /** Ids of the organisation's environments a policy covers. */
  private async environmentsInScope(org: OrganisationEntity, p: Pick<ClusterPolicyEntity, 'environments' | 'environmentTypes'>): Promise<number[]> {
    const envs: { id: string; slug: string; type: string | null }[] = await this.txHost.tx.query(
      `SELECT id, slug, type FROM environments WHERE organisation_id = $1 AND deleted_at IS NULL`,
      [org.id],
    );
    return envs.filter((e) => policyCovers(p, e)).map((e) => Number(e.id));
  }

  private async batchInputs(org: OrganisationEntity, batch: ClusterRow[], user: PolicyUserVariable, fields: Set<string> | null) {
    const objects = await this.inputs.objects(batch, fields);
    const envs = await this.inputs.environments(batch.map((c) => Number(c.environmentId)));
    const { slugValue: _s, id: _i, ...organisation } = await this.inputs.organisation(org.id);
    void _s;
    void _i;
    const inputs: PolicyInput[] = batch.map((c, i) => ({
      object: objects[i],
      oldObject: objects[i],
      environment: envs.get(Number(c.environmentId))!.variable,
      organisation,
      request: { operation: 'UPDATE', resource: 'clusters', user },
    }));
    return { inputs, envSlugs: new Map([...envs.values()].map((e) => [e.id, e.slug])) };
  }
}
