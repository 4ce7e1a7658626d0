import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBody, ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { PlatformAdminOnly } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiExecutorErrors } from '../executor/executor-docs';
import { ApiPageResponse, PageQueryDto } from '../common/paging';
import { ClusterPoliciesService, POLICY_SORTABLE } from '../policies/cluster-policies.service';
import {
  ClusterPolicyResponse,
  CreateClusterPolicyRequest,
  MAX_PLATFORM_POLICIES,
  UpdateClusterPolicyRequest,
} from '../policies/dto/cluster-policy.dto';
import { POLICY_EXAMPLES } from '../policies/policy-examples';

const EXAMPLES = Object.fromEntries(POLICY_EXAMPLES.map((e) => [e.body.name, { summary: e.summary, value: e.body }]));

/** Platform policies: cluster policies of every organisation, set by platform administrators and evaluated first. */
@ApiTags('Platform administration')
@PlatformAdminOnly()
@Controller('admin/v1/cluster-policies')
export class ClusterPoliciesAdminController {
  constructor(private readonly policies: ClusterPoliciesService) {}

  @Get()
  @ApiDoc({
    summary: 'List the platform policies',
    description: 'Organisations see the same policies, read-only, at the top of their own list.',
  })
  @ApiPageResponse(ClusterPolicyResponse, { form: 'A', sortable: Object.keys(POLICY_SORTABLE), defaultOrder: 'id' })
  @ApiStandardErrors({ notFound: false })
  list(@Query() query: PageQueryDto) {
    return this.policies.list(null, query);
  }

  @Post()
  @HttpCode(200)
  @ApiExecutorErrors()
  @ApiDoc({
    summary: 'Create a platform policy (audited CLUSTER_POLICY_CREATED)',
    description:
      'Applies to every organisation\'s clusters and is evaluated before the organisations\' own policies, which cannot change it. Scoped by ' +
      'environmentTypes only (environment slugs belong to one organisation). Checked as an organisation policy is (400 with the position).',
    errors: `409 when the name is taken among platform policies, or beyond ${MAX_PLATFORM_POLICIES} platform policies.`,
  })
  @ApiBody({ type: CreateClusterPolicyRequest, examples: EXAMPLES })
  @ApiOkResponse({ type: ClusterPolicyResponse })
  @ApiStandardErrors({ notFound: false, conflict: `Name taken, or there are already ${MAX_PLATFORM_POLICIES} platform policies` })
  create(@Body() body: CreateClusterPolicyRequest, @CurrentPrincipal() p: Principal): Promise<ClusterPolicyResponse> {
    return this.policies.create(null, body, p.user.username);
  }

  @Get(':policyIdentity')
  @ApiParam({ name: 'policyIdentity', format: 'uuid' })
  @ApiDoc({ summary: 'Get one platform policy', errors: '404 when no platform policy has that identity.' })
  @ApiOkResponse({ type: ClusterPolicyResponse })
  @ApiStandardErrors({ badRequest: false })
  get(@Param('policyIdentity') identity: string): Promise<ClusterPolicyResponse> {
    return this.policies.get(null, identity);
  }

  @Patch(':policyIdentity')
  @ApiExecutorErrors()
  @ApiParam({ name: 'policyIdentity', format: 'uuid' })
  @ApiDoc({
    summary: 'Change a platform policy (audited CLUSTER_POLICY_UPDATED with old and new)',
    description: 'Checked as on create (400 naming the position); applies to every organisation from the next change on.',
    errors: '404 when unknown; 409 when the new name is taken.',
  })
  @ApiBody({ type: UpdateClusterPolicyRequest, examples: { message: { summary: 'Reword the message', value: { message: 'the cluster has no Pod Security Standards profile; set podSecurityStandardsProfile' } } } })
  @ApiOkResponse({ type: ClusterPolicyResponse })
  @ApiStandardErrors({ conflict: 'Name taken' })
  update(@Param('policyIdentity') identity: string, @Body() body: UpdateClusterPolicyRequest): Promise<ClusterPolicyResponse> {
    return this.policies.update(null, identity, body);
  }

  @Delete(':policyIdentity')
  @HttpCode(204)
  @ApiParam({ name: 'policyIdentity', format: 'uuid' })
  @ApiDoc({
    summary: 'Delete a platform policy (audited CLUSTER_POLICY_DELETED)',
    description: 'The policy stops applying to every organisation at once.',
    errors: '404 when unknown.',
  })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiStandardErrors({ badRequest: false })
  remove(@Param('policyIdentity') identity: string): Promise<void> {
    return this.policies.remove(null, identity);
  }
}
