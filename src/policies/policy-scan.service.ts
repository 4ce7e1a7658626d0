import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { HttpException, HttpStatus, Injectable } from '@nestjs/common';
import type { ClusterRow } from '../clusters/cluster-read';
import { Executor, ExecutorAdmission, executorKey } from '../executor/executor';
import { CLUSTER_SELECT } from '../clusters/cluster-read';
import { Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import type { OrganisationEntity } from '../organisations/organisation.entity';
import type { ClusterPolicyEntity } from './cluster-policy.entity';
import { ClusterPoliciesService, PolicyBody } from './cluster-policies.service';
import { policyCovers } from './cluster-policy-enforcer';
import type { PolicyEvaluationResult, PolicyViolation } from './dto/cluster-policy.dto';
import { PolicyEvaluator } from './policy-evaluator';
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
 * `oldObject` are the cluster as it is; `request.user` is the caller). Work is done in keyset batches of
 * SCAN_BATCH_SIZE clusters with the event loop yielded between batches; a violations page scans the
 * organisation's clusters in scope once (it counts them all), bounded by MAX_CONCURRENT_SCANS and SCAN_DEADLINE_MS.
 */
@Injectable()
export class PolicyScanService {
  private running = 0;

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly policies: ClusterPoliciesService,
    private readonly inputs: PolicyInputs,
    private readonly evaluator: PolicyEvaluator,
    private readonly executor: Executor,
  ) {}

  /**
   * One page (form A) of the clusters in the body's scope, each with whether it passes. Admitted by the executor
   * under the organisation first (429 while it has too many such operations in progress), before anything is read.
   */
  async evaluate(org: OrganisationEntity, body: PolicyBody, query: PageQueryDto, user: PolicyUserVariable): Promise<Page<PolicyEvaluationResult>> {
    const admission = this.executor.admit(executorKey(org.id));
    try {
      return await this.evaluatePage(org, body, query, user, admission);
    } finally {
      admission.release();
    }
  }

  private async evaluatePage(org: OrganisationEntity, body: PolicyBody, query: PageQueryDto, user: PolicyUserVariable, admission: ExecutorAdmission) {
    await this.policies.checkBody(org, body, true, admission);
    const req = toPageRequest(query, {});
    const fields = await this.evaluator.objectFields(org.id, [body], admission);
    const envIds = await this.environmentsInScope(org, body);
    const [{ n }] = await this.txHost.tx.query(
      `SELECT count(*)::int AS n FROM clusters c WHERE c.organisation_id = $1 AND c.deleted_at IS NULL AND c.environment_id = ANY($2::bigint[])`,
      [org.id, envIds],
    );
    const rows: ClusterRow[] = await this.txHost.tx.query(
      `SELECT ${CLUSTER_SELECT} FROM clusters c WHERE c.organisation_id = $1 AND c.deleted_at IS NULL AND c.environment_id = ANY($2::bigint[])
        ORDER BY c.id LIMIT $3 OFFSET $4`,
      [org.id, envIds, req.size, req.offset],
    );
    const results: PolicyEvaluationResult[] = [];
    for (let i = 0; i < rows.length; i += SCAN_BATCH_SIZE) {
      const batch = rows.slice(i, i + SCAN_BATCH_SIZE);
      const { inputs, envSlugs } = await this.batchInputs(org, batch, user, fields);
      const outcomes = await this.evaluator.evaluate(org.id, [body], inputs, admission);
      batch.forEach((c, j) => {
        const { passed, message, error } = outcomes[j][0];
        results.push({ clusterIdentity: c.identity, clusterSlug: c.slug, environmentSlug: envSlugs.get(Number(c.environmentId))!, passed, message, evaluationError: error });
      });
      await yieldEventLoop();
    }
    return toPage(results, n, req, 'A');
  }

  /** One page (form A) of the clusters that violate a saved policy now, in cluster order. */
  async violations(org: OrganisationEntity, identity: string, query: PageQueryDto, user: PolicyUserVariable): Promise<Page<PolicyViolation>> {
    const policy = await this.policies.find(org, identity);
    const req = toPageRequest(query, {});
    if (this.running >= MAX_CONCURRENT_SCANS) {
      throw Object.assign(new HttpException('Too many policy scans are running; retry in a few seconds.', HttpStatus.TOO_MANY_REQUESTS), {
        headers: { 'Retry-After': '5' },
      });
    }
    const admission = this.executor.admit(executorKey(org.id));
    this.running++;
    try {
      return await this.scan(org, policy, req, user, admission);
    } finally {
      this.running--;
      admission.release();
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
      const batch: ClusterRow[] = await this.txHost.tx.query(
        `SELECT ${CLUSTER_SELECT} FROM clusters c
          WHERE c.organisation_id = $1 AND c.deleted_at IS NULL AND c.environment_id = ANY($2::bigint[]) AND c.id > $3
          ORDER BY c.id LIMIT $4`,
        [org.id, envIds, after, SCAN_BATCH_SIZE],
      );
      if (!batch.length) break;
      after = Number(batch[batch.length - 1].id);
      const { inputs, envSlugs } = await this.batchInputs(org, batch, user, fields);
      const outcomes = await this.evaluator.evaluate(org.id, [policy], inputs, admission);
      batch.forEach((c, j) => {
        const r = outcomes[j][0];
        if (r.passed) return;
        if (total >= req.offset && page.length < req.size) {
          page.push({ clusterIdentity: c.identity, clusterSlug: c.slug, environmentSlug: envSlugs.get(Number(c.environmentId))!, message: r.message ?? policy.message });
        }
        total++;
      });
      if (batch.length < SCAN_BATCH_SIZE) break;
      await yieldEventLoop();
    }
    return toPage(page, total, req, 'A');
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
