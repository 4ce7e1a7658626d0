import { Controller, Get, Header, Param } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext, RequireOrgRole } from '../auth/organisation-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ClusterAccessService } from './cluster-access.service';
import { ClusterOidcConfigResponse } from './dto/cluster-access.dto';

const NOT_PROVISIONED = 'The cluster has no provisioned control plane yet (provisioning has not passed CLUSTER_PROVISIONED)';

@ApiTags('Clusters')
@Controller('api/v1/orgs/:organisationSlug/clusters/:environmentSlug/:clusterSlug')
@ApiParam({ name: 'organisationSlug' })
@ApiParam({ name: 'environmentSlug' })
@ApiParam({ name: 'clusterSlug' })
export class ClusterAccessController {
  constructor(private readonly access: ClusterAccessService) {}

  @Get('oidc-config')
  @RequireOrgRole('VIEWER')
  @ApiDoc({
    summary: "The cluster's API endpoint, CA certificate and OIDC client",
    description: 'Available once the control plane is provisioned (409 before). VIEWER callers get `clientSecret` redacted.',
  })
  @ApiOkResponse({ type: ClusterOidcConfigResponse })
  @ApiStandardErrors({ conflict: NOT_PROVISIONED })
  oidcConfig(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') env: string,
    @Param('clusterSlug') cluster: string,
  ): Promise<ClusterOidcConfigResponse> {
    return this.access.oidcConfig(ctx.organisation, ctx.role, env, cluster);
  }

  @Get('kubeconfig')
  @RequireOrgRole('MEMBER')
  @Header('content-type', 'application/yaml; charset=utf-8')
  @ApiProduces('application/yaml')
  @ApiDoc({
    summary: 'A kubeconfig for the cluster that logs in with OIDC (kubectl oidc-login exec plugin)',
    description:
      "YAML with the cluster's server and CA (certificate-authority-data) and a user running " +
      '`kubectl oidc-login get-token --oidc-issuer-url=... --oidc-client-id=... --oidc-client-secret=...`. ' +
      'It carries the OIDC client secret, which VIEWER callers may not see.',
    errors: '409 before the control plane is provisioned.',
  })
  @ApiOkResponse({ description: 'The kubeconfig', content: { 'application/yaml': { schema: { type: 'string' } } } })
  @ApiStandardErrors({ conflict: NOT_PROVISIONED })
  kubeconfig(@OrgContext() ctx: OrganisationContext, @Param('environmentSlug') env: string, @Param('clusterSlug') cluster: string): Promise<string> {
    return this.access.kubeconfig(ctx.organisation, env, cluster);
  }
}
