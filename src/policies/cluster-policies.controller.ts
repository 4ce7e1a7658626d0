import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { NoAudit } from '../audit/audit.interceptor';
import { OrganisationContext, OrgContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiExecutorErrors } from '../executor/executor-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { ClusterPoliciesService, POLICY_SORTABLE, policyBody } from './cluster-policies.service';
import {
  ClusterPolicyResponse,
  CreateClusterPolicyRequest,
  MAX_POLICIES_PER_ORGANISATION,
  PolicyEvaluationResult,
  PolicyViolation,
  UpdateClusterPolicyRequest,
} from './dto/cluster-policy.dto';
import { POLICY_EXAMPLES, POLICY_UPDATE_EXAMPLES } from './policy-examples';
import { PolicyScanService } from './policy-scan.service';
import { Admission, AdmitUnderOrganisation } from './policy-admission.interceptor';
import type { ExecutorAdmission } from '../executor/executor';
import { principalPolicyUser } from './policy-user';

const EXAMPLES = Object.fromEntries(POLICY_EXAMPLES.map((e) => [e.body.name, { summary: e.summary, value: e.body }]));

/** Cluster policies of an organisation: CEL guardrails evaluated on every change of its clusters (docs/policies.md). */
@ApiTags('Cluster policies')
@ApiParam({ name: 'organisationSlug' })
@Controller('api/v1/orgs/:organisationSlug/cluster-policies')
export class ClusterPoliciesController {
  constructor(
    private readonly policies: ClusterPoliciesService,
    private readonly scans: PolicyScanService,
  ) {}

  @Get()
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "List the organisation's cluster policies, platform policies first",
    description: 'Platform policies (scope PLATFORM) apply to every organisation and are evaluated first; they are read-only here.',
  })
  @ApiPageResponse(ClusterPolicyResponse, { form: 'A', sortable: Object.keys(POLICY_SORTABLE), defaultOrder: 'platform policies first, then by id' })
  @ApiStandardErrors({ notFound: false })
  list(@OrgContext() ctx: OrganisationContext, @Query() query: PageQueryDto) {
    return this.policies.list(ctx.organisation, query);
  }

  @Post()
  @HttpCode(200)
  @ApiExecutorErrors()
  @RequireOrgRole('ADMIN')
  @ApiDoc({
    summary: 'Create a cluster policy (audited CLUSTER_POLICY_CREATED)',
    description:
      'The expression is parsed and type-checked against the policy variables now, on the executor\'s worker threads: a syntax or type error, a ' +
      'sub-expression that may build a value larger than the size cap, an estimated worst-case cost above the limit (naming the sub-expression ' +
      'that makes most of it and its estimate) or a matches() pattern that is not an RE2 string literal is a 400 naming the position (line, ' +
      'column). The examples are the ready policies of docs/policies.md.',
    errors: `409 when the name is taken in the organisation, or beyond ${MAX_POLICIES_PER_ORGANISATION} policies per organisation.`,
  })
  @ApiBody({ type: CreateClusterPolicyRequest, examples: EXAMPLES })
  @ApiOkResponse({ type: ClusterPolicyResponse })
  @ApiStandardErrors({ notFound: false, conflict: `Name taken, or the organisation already has ${MAX_POLICIES_PER_ORGANISATION} policies` })
  create(@OrgContext() ctx: OrganisationContext, @Body() body: CreateClusterPolicyRequest, @CurrentPrincipal() p: Principal): Promise<ClusterPolicyResponse> {
    return this.policies.create(ctx.organisation, body, p.user.username);
  }

  @Post('evaluate')
  @HttpCode(200)
  @NoAudit()
  @ApiExecutorErrors()
  @RequireOrgRole('VIEWER')
  @AdmitUnderOrganisation()
  @ApiDoc({
    summary: 'Try a policy (not saved) on the clusters it would cover',
    description:
      'Answers a page of the clusters in the policy\'s scope (cluster order) with `passed` and the message, each cluster evaluated as an UPDATE that ' +
      'changes nothing (`object` and `oldObject` are the cluster as it is; `request.user` is the caller). The body is checked as on create (400). ' +
      'The check and each evaluation run on the executor\'s worker threads under the organisation\'s queue (429 with Retry-After when it has too ' +
      'many such tasks waiting), each evaluation within its run-time budget (an evaluation stopped by it answers `passed: false` with ' +
      '`evaluationError`); the cost of one call is bounded by the page size (at most 500 clusters).',
  })
  @ApiBody({ type: CreateClusterPolicyRequest, examples: EXAMPLES })
  @ApiPageResponse(PolicyEvaluationResult, { form: 'A', sortable: [], defaultOrder: 'cluster order (id)' })
  @ApiStandardErrors({ notFound: false })
  evaluate(
    @OrgContext() ctx: OrganisationContext,
    @Body() body: CreateClusterPolicyRequest,
    @Query() query: PageQueryDto,
    @CurrentPrincipal() p: Principal,
    @Admission() admission: ExecutorAdmission,
  ) {
    return this.scans.evaluate(ctx.organisation, { ...policyBody(body), enabled: true }, query, principalPolicyUser(p), admission);
  }

  @Get(':policyIdentity')
  @RequireOrgRole('VIEWER')
  @ApiParam({ name: 'policyIdentity', format: 'uuid' })
  @ApiDoc({
    summary: 'Get one cluster policy of the organisation, or a platform policy',
    errors: '404 when no policy with that identity belongs to the organisation or the platform.',
  })
  @ApiOkResponse({ type: ClusterPolicyResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@OrgContext() ctx: OrganisationContext, @Param('policyIdentity') identity: string): Promise<ClusterPolicyResponse> {
    return this.policies.get(ctx.organisation, identity);
  }

  @Get(':policyIdentity/violations')
  @ApiExecutorErrors()
  @RequireOrgRole('VIEWER')
  @AdmitUnderOrganisation()
  @ApiParam({ name: 'policyIdentity', format: 'uuid' })
  @ApiDoc({
    summary: 'A page of the clusters that violate a saved policy now',
    description:
      'Each cluster in the policy\'s scope is evaluated as an UPDATE that changes nothing, in keyset batches of 500 with the event loop yielded between ' +
      'batches (a disabled policy is evaluated too). Every call scans the clusters in scope once to count them: see docs/performance.md for the ' +
      'cost at 100k clusters.',
    errors:
      '404 when the policy is unknown; 429 while too many scans run in this replica or the organisation has too many executor tasks waiting; ' +
      '503 if a scan exceeds its deadline.',
  })
  @ApiPageResponse(PolicyViolation, { form: 'A', sortable: [], defaultOrder: 'cluster order (id)' })
  @ApiStandardErrors()
  violations(
    @OrgContext() ctx: OrganisationContext,
    @Param('policyIdentity') identity: string,
    @Query() query: PageQueryDto,
    @CurrentPrincipal() p: Principal,
    @Admission() admission: ExecutorAdmission,
  ) {
    return this.scans.violations(ctx.organisation, identity, query, principalPolicyUser(p), admission);
  }

  @Patch(':policyIdentity')
  @ApiExecutorErrors()
  @RequireOrgRole('ADMIN')
  @ApiParam({ name: 'policyIdentity', format: 'uuid' })
  @ApiDoc({
    summary: 'Change a cluster policy (audited CLUSTER_POLICY_UPDATED with old and new)',
    description:
      'Checked as on create (the expressions only when they change, so a policy saved under older limits can still be disabled or given ' +
      'failurePolicy Ignore). Setting environments clears environmentTypes and the other way round; null or [] removes the scope.',
    errors: '403 for a platform policy; 404 when unknown; 409 when the new name is taken.',
  })
  @ApiBody({ type: UpdateClusterPolicyRequest, examples: POLICY_UPDATE_EXAMPLES })
  @ApiOkResponse({ type: ClusterPolicyResponse })
  @ApiStandardErrors({ conflict: 'Name taken' })
  update(@OrgContext() ctx: OrganisationContext, @Param('policyIdentity') identity: string, @Body() body: UpdateClusterPolicyRequest): Promise<ClusterPolicyResponse> {
    return this.policies.update(ctx.organisation, identity, body);
  }

  @Delete(':policyIdentity')
  @HttpCode(204)
  @RequireOrgRole('ADMIN')
  @ApiParam({ name: 'policyIdentity', format: 'uuid' })
  @ApiDoc({
    summary: 'Delete a cluster policy (audited CLUSTER_POLICY_DELETED)',
    description: 'The policy stops applying at once.',
    errors: '403 for a platform policy (only platform administrators delete those); 404 when unknown.',
  })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ badRequest: false })
  remove(@OrgContext() ctx: OrganisationContext, @Param('policyIdentity') identity: string): Promise<void> {
    return this.policies.remove(ctx.organisation, identity);
  }
}
