import { Controller, ForbiddenException, Get, Header, Param } from '@nestjs/common';
import { ApiOkResponse, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import { OrgContext, OrganisationContext } from '../identity/organisation-context';
import { RequireOrgRole } from '../common/route-access';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { mayReadSecret, secretReaderOf } from '../common/secret-fields';
import { ClusterAccessService } from './cluster-access.service';
import { CLUSTER_OIDC_SECRET, ClusterOidcConfigResponse } from './dto/cluster-access.dto';

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
    description:
      'Available once the control plane is provisioned (409 before). VIEWERs, READ_ONLY tokens and platform administrators ' +
      'outside the organisation get `clientSecret` as `<secret>`.',
  })
  @ApiOkResponse({ type: ClusterOidcConfigResponse })
  @ApiStandardErrors({ conflict: NOT_PROVISIONED })
  oidcConfig(
    @OrgContext() ctx: OrganisationContext,
    @Param('environmentSlug') env: string,
    @Param('clusterSlug') cluster: string,
  ): Promise<ClusterOidcConfigResponse> {
    return this.access.oidcConfig(ctx.organisation, env, cluster);
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
      'It carries the OIDC client secret, so it needs a credential that may read it: a MEMBER or above, not through a READ_ONLY token.',
    errors: '403 for a READ_ONLY token (the kubeconfig carries the OIDC client secret). 409 before the control plane is provisioned.',
  })
  @ApiOkResponse({ description: 'The kubeconfig', content: { 'application/yaml': { schema: { type: 'string' } } } })
  @ApiStandardErrors({ conflict: NOT_PROVISIONED })
  kubeconfig(
    @OrgContext() ctx: OrganisationContext,
    @CurrentPrincipal() principal: Principal,
    @Param('environmentSlug') env: string,
    @Param('clusterSlug') cluster: string,
  ): Promise<string> {
    if (!mayReadSecret(CLUSTER_OIDC_SECRET, secretReaderOf({ organisationContext: ctx, user: principal }))) {
      throw new ForbiddenException(
        "The kubeconfig carries the cluster's OIDC client secret, which this credential may not read: use a FULL_ACCESS token (or an OIDC login) of a MEMBER or above.",
      );
    }
    return this.access.kubeconfig(ctx.organisation, env, cluster);
  }
}
