import type { PathParameterExamples, SlugPathParameter } from '../common/openapi-polish';

/**
 * The demo organisation's names and identities, in one place: the seeder (demo-data.service.ts) creates
 * exactly these, and the OpenAPI document (src/common/openapi-polish.ts) uses them as the examples of the
 * path parameters, so Swagger UI's pre-filled values address real resources on a fresh install.
 */
export const DEMO_SLUGS = {
  organisation: 'acme',
  environment: 'production',
  cluster: 'web',
  /** The cluster's observability tenant: `<environment>-<cluster>`. */
  tenant: 'production-web',
  /** The dashboard integration the example of POST .../integrations/dashboard creates (named "Team dashboards"). */
  integration: 'team-dashboards',
} as const;

/** Fixed UUIDs (version 4 form) of the demo organisation's resources. */
export const DEMO_IDENTITIES = {
  organisation: 'ac3e0000-0000-4000-8000-000000000001',
  /** The bootstrap administrator's membership of the demo organisation. */
  organisationMember: 'ac3e0000-0000-4000-8000-000000000002',
  /** The alerting integration every organisation gets. */
  organisationIntegration: 'ac3e0000-0000-4000-8000-000000000003',
  environment: 'ac3e0000-0000-4000-8000-000000000004',
  cloudAccount: 'ac3e0000-0000-4000-8000-000000000005',
  cloudCredentials: 'ac3e0000-0000-4000-8000-000000000006',
  maintenanceSchedule: 'ac3e0000-0000-4000-8000-000000000007',
  cluster: 'ac3e0000-0000-4000-8000-000000000008',
  nodePool: 'ac3e0000-0000-4000-8000-000000000009',
  scheduledClusterUpgrade: 'ac3e0000-0000-4000-8000-00000000000a',
  webhook: 'ac3e0000-0000-4000-8000-00000000000b',
  clusterPolicy: 'ac3e0000-0000-4000-8000-00000000000c',
  /** A platform policy (no organisation), for /admin/v1/cluster-policies. */
  platformPolicy: 'ac3e0000-0000-4000-8000-00000000000d',
  /** The price book's first entry (control plane), for /admin/v1/price-book. */
  priceBookEntry: 'ac3e0000-0000-4000-8000-00000000000e',
  budget: 'ac3e0000-0000-4000-8000-00000000000f',
  /** A second personal access token of the bootstrap administrator (its value is never shown): one to revoke. */
  personalAccessToken: 'ac3e0000-0000-4000-8000-000000000010',
  /** An active silence in the demo cluster's tenant. */
  silence: 'ac3e0000-0000-4000-8000-000000000011',
  /**
   * A second key of the demo account, not its primary one (rotated out, kept by mistake): the example of the
   * credentials paths, so their DELETE removes it. The primary credentials (`cloudCredentials`) are held while
   * clusters of the account exist or are being deleted.
   */
  spareCloudCredentials: 'ac3e0000-0000-4000-8000-000000000012',
  /**
   * The membership of a colleague (user `sam.operator`, MEMBER): the example of the member paths, so their PATCH and
   * DELETE change someone who can be changed (the administrator is the only OWNER, and an organisation keeps one).
   */
  colleagueMember: 'ac3e0000-0000-4000-8000-000000000013',
} as const;

/** Which table each identity is pinned for while the seeder runs (src/common/pinned-identities.ts). */
export const DEMO_IDENTITY_TABLES: Record<keyof typeof DEMO_IDENTITIES, string> = {
  organisation: 'organisations',
  organisationMember: 'organisation_members',
  organisationIntegration: 'organisation_integrations',
  environment: 'environments',
  cloudAccount: 'cloud_accounts',
  cloudCredentials: 'cloud_credentials',
  maintenanceSchedule: 'maintenance_schedules',
  cluster: 'clusters',
  nodePool: 'cluster_node_pools',
  scheduledClusterUpgrade: 'scheduled_cluster_upgrades',
  webhook: 'webhook_subscriptions',
  clusterPolicy: 'cluster_policies',
  platformPolicy: 'cluster_policies',
  priceBookEntry: 'price_book_entries',
  budget: 'budgets',
  personalAccessToken: 'personal_access_tokens',
  silence: 'alert_silences',
  spareCloudCredentials: 'cloud_credentials',
  colleagueMember: 'organisation_members',
};

/** The example of each slug path parameter, by parameter name. */
export const SLUG_PARAMETER_EXAMPLES: Record<SlugPathParameter, string> = {
  organisationSlug: DEMO_SLUGS.organisation,
  environmentSlug: DEMO_SLUGS.environment,
  clusterSlug: DEMO_SLUGS.cluster,
  cluster: DEMO_SLUGS.cluster,
  tenantSlug: DEMO_SLUGS.tenant,
  integrationSlug: DEMO_SLUGS.integration,
};

/** The example of each identity path parameter, by parameter name (`identity` only appears on scheduled upgrades). */
export const UUID_PARAMETER_EXAMPLES: Record<string, string> = {
  organisationIdentity: DEMO_IDENTITIES.organisation,
  memberIdentity: DEMO_IDENTITIES.colleagueMember,
  organisationIntegrationIdentity: DEMO_IDENTITIES.organisationIntegration,
  cloudAccountIdentity: DEMO_IDENTITIES.cloudAccount,
  credentialsIdentity: DEMO_IDENTITIES.spareCloudCredentials,
  maintenanceScheduleIdentity: DEMO_IDENTITIES.maintenanceSchedule,
  clusterIdentity: DEMO_IDENTITIES.cluster,
  nodePoolIdentity: DEMO_IDENTITIES.nodePool,
  nodePoolId: DEMO_IDENTITIES.nodePool,
  scheduledClusterUpgradeIdentity: DEMO_IDENTITIES.scheduledClusterUpgrade,
  identity: DEMO_IDENTITIES.scheduledClusterUpgrade,
  webhookIdentity: DEMO_IDENTITIES.webhook,
  policyIdentity: DEMO_IDENTITIES.clusterPolicy,
  entryIdentity: DEMO_IDENTITIES.priceBookEntry,
  budgetIdentity: DEMO_IDENTITIES.budget,
  token_id: DEMO_IDENTITIES.personalAccessToken,
  /**
   * A fresh install has delivered nothing (the demo webhook is disabled), so no delivery exists to name: this one is
   * well-formed, so Execute can be pressed and the answer (404) says there is no such delivery; GET .../deliveries lists real ones.
   */
  deliveryIdentity: 'ac3e0000-0000-4000-8000-0000000000ff',
  /** PATCH .../cloud-accounts/{id}: the demo account's credentials. */
  primaryCloudCredentials: DEMO_IDENTITIES.cloudCredentials,
  silenceId: DEMO_IDENTITIES.silence,
};

/** The example of an identity path parameter of `path`: the platform policy on /admin routes, else by name. */
export function identityParameterExample(path: string, name: string): string | undefined {
  if (name === 'policyIdentity' && path.startsWith('/admin/')) return DEMO_IDENTITIES.platformPolicy;
  return UUID_PARAMETER_EXAMPLES[name];
}

/** The demo organisation's names and identities as the examples of the document's path parameters (src/app.factory.ts). */
export const DEMO_PATH_PARAMETER_EXAMPLES: PathParameterExamples = { slugs: SLUG_PARAMETER_EXAMPLES, identity: identityParameterExample };
