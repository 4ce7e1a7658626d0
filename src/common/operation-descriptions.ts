/**
 * Descriptions of the operations whose controllers carry only a summary, by the document's operationId
 * (`<Controller>_<handler>`). openapi-polish.ts puts each one on its operation when the code gives that
 * operation no description of its own; an operation described in the code keeps its own text.
 * test/common/operation-descriptions.spec.ts checks that every operation ends up with a description and that
 * every key here still names an operation (no stale entries after a rename).
 *
 * Kept in one file, apart from the controllers, so that the wording can change without touching modules that
 * other work is changing at the same time.
 */

const VIEWER = 'Any member of the organisation may call it (VIEWER or above); platform administrators may read every organisation.';
const MEMBER = 'Needs the MEMBER role or above in the organisation.';
const ADMIN = 'Needs the ADMIN role or above in the organisation.';
const PLATFORM_ADMIN = 'Platform administrators only; everyone else gets 403.';
const ANY_USER = 'Any authenticated user may call it; it is not tied to an organisation.';
const NOT_MEMBER = 'A caller who is not a member of the organisation gets 403.';

/** Paging text: form A answers `sort` as an object, form B as an array of orders. */
function paging(form: 'A' | 'B', sortable: string[], defaultOrder?: string): string {
  const sort = sortable.length
    ? ` Sortable by ${sortable.join(', ')} (repeat \`sort=property,asc|desc[,ignorecase]\`); any other sort property is 400.`
    : '';
  const order = defaultOrder ? ` Default order: ${defaultOrder}.` : '';
  return `Answers a page (form ${form}): \`page\` is zero-based, \`size\` defaults to 50 and is capped at 500.${sort}${order}`;
}

const CREDENTIALS_RULES =
  'The platform in the path must be the platform of the cloud account (400 otherwise, naming the right path). ' +
  'The secret values are stored encrypted and are never answered again; the first credentials of an account become its primary credentials. ' +
  `${ADMIN} 404 when the cloud account is not in the organisation.`;

function credentials(what: string): string {
  return `Adds credentials of ${what} to the cloud account. ${CREDENTIALS_RULES}`;
}

export const OPERATION_DESCRIPTIONS: Record<string, string> = {
  // ---- Clusters and node pools ------------------------------------------------------------------
  ClustersController_listForOrganisation:
    `Every cluster of the organisation that is not deleted, across its environments. \`maintenanceSchedule\` (a schedule identity) keeps the clusters that use that schedule; ` +
    `\`includeDetails\` adds actualState and \`show-compute\` fills cpu and memory. ${paging('B', ['id', 'name', 'slug', 'status', 'region', 'version', 'cloudProvider', 'createdAt'])} ${VIEWER}`,
  ClustersController_listForCloudAccount:
    `The clusters (not deleted) that run on the given cloud account of the organisation, e.g. to see what blocks deleting the account. ` +
    `${paging('B', ['id', 'name', 'slug', 'status', 'region', 'version', 'cloudProvider', 'createdAt'])} ${VIEWER} 404 when the cloud account is not in the organisation.`,
  ClustersController_listForEnvironment:
    `The clusters (not deleted) of one environment. \`show-compute\` fills cpu and memory from the node pools; \`includeDetails\` adds actualState. ` +
    `${paging('B', ['id', 'name', 'slug', 'status', 'region', 'version', 'cloudProvider', 'createdAt'])} ${VIEWER} 404 when the environment does not exist in the organisation.`,
  ClustersController_get:
    `One cluster by environment and cluster slug, with its node pools, addons, network settings and status. \`includeDetails\` adds actualState (what the provider reports); ` +
    `\`show-compute\` fills cpu and memory. ${VIEWER} 404 when the environment or the cluster does not exist (a deleted cluster is not found).`,
  NodePoolsController_list:
    `Every node pool of the cluster with its node type, size bounds and autoscaling settings, as a plain array. ${VIEWER} 404 when the environment or the cluster does not exist.`,
  NodePoolsController_update:
    "Replaces the node pool's whole definition: fields left out take their defaults rather than keeping their old values (only the name stays when left out). nodeSize must be a node type of the cluster's provider, " +
    `minSize may not exceed maxSize and the name stays unique in the cluster. The path accepts the pool's identity (uuid) or its numeric id. ${MEMBER} ` +
    '404 when the pool is not in the cluster; 409 when the new name is taken or the cluster is being deleted.',
  NodePoolsController_remove:
    `Removes the node pool (audited NODE_POOL_DELETED). The last pool may be removed too: a cluster may run without node pools, which are often managed as separate resources. ` +
    `The path accepts the pool's identity (uuid) or its numeric id. ${MEMBER} 404 when the pool is not in the cluster; 409 while the cluster is being deleted.`,
  ClustersAdminController_list:
    `Every cluster of every organisation. \`hideDeleted=false\` also lists deleted clusters (with deletedAt); \`includeDetails\` adds actualState; \`show-compute=false\` leaves cpu and memory empty. ` +
    `${paging('A', ['id', 'name', 'slug', 'status', 'region', 'version', 'cloudProvider', 'createdAt'])} ${PLATFORM_ADMIN}`,
  ClustersAdminController_get:
    `One cluster of any organisation by its identity, as the original admin client reads it: actualState and cpu/memory are included unless \`includeDetails=false\` or \`show-compute=false\`. ` +
    `${PLATFORM_ADMIN} 404 when no cluster that is not deleted has this identity (also for a value that is not a UUID).`,
  ClustersAdminController_update:
    `Changes the version of any cluster by identity. \`version\` must be an available upgrade or downgrade target of the running version, and the cluster must be started or stopped; ` +
    `the change is audited like the organisation's cluster PATCH and the reconciler carries it out. A \`clusterIdentity\` in the body must equal the one in the path (400). ` +
    `${PLATFORM_ADMIN} 404 when the cluster does not exist; 409 while it is not started or stopped.`,

  // ---- Observability ------------------------------------------------------------------------------
  MonitoringController_list:
    `The monitoring (observability) tenants of the organisation, one per cluster, with the cluster they belong to. ` +
    `${paging('B', ['id', 'name', 'slug', 'createdAt', 'modifiedAt', 'available'])} ${VIEWER}`,
  MonitoringController_count: `The number of monitoring tenants of the organisation (deleted tenants are not counted). ${VIEWER}`,
  MonitoringController_get:
    `One monitoring tenant by slug, without its push addresses (GET /observability/{tenantSlug} adds them). ${VIEWER} 404 when the tenant does not exist in the organisation.`,
  MonitoringController_getAlerting:
    "The tenant's alerting configuration: its alert manager file and rule files. Secrets in it (receiver passwords, tokens, webhook URLs) are answered only to MEMBER or above " +
    `with a token that may write; VIEWERs and READ_ONLY tokens see a placeholder instead. ${VIEWER} 404 when the tenant does not exist.`,
  MonitoringController_listAlerts:
    "Every alert of the organisation's monitoring tenants in one list: firing first, then the newest. Each carries the original client's alert fields " +
    '(labels, annotations, state, activeAt, value) and the slugs of its tenant, cluster and environment. ' +
    `Alerts muted by an active silence show as suppressed. Counts per tenant: the alerts summary. ${VIEWER}`,
  MonitoringController_alertsSummary:
    'One entry per monitoring tenant of the organisation (by tenant slug; also those without alerts) with its cluster and environment and how many of its ' +
    `alerts fire, are suppressed by an active silence and are resolved. ${VIEWER}`,
  MonitoringController_tenantAlerts:
    `The alerts received for one monitoring tenant: firing alerts first, then by start time, newest first. A firing alert has no endsAt until it resolves. ${VIEWER} ` +
    '404 when the tenant does not exist in the organisation.',
  MonitoringController_getEnvironmentAlerting:
    "The environment's alerting configuration (alert manager file and rule files), shared by the tenants of its clusters. Secrets are answered only to MEMBER or above with a token " +
    `that may write; others see a placeholder. ${VIEWER} 404 when the environment does not exist in the organisation.`,
  IntegrationsController_list:
    'The integrations of the organisation as a plain array. Today there is one, of type `alerting`; it is created (disabled) the first time it is read. ' +
    `${VIEWER}`,
  IntegrationsController_listDashboards:
    `The dashboard integrations of the organisation with their URL and health status (PENDING until the first check, then CONNECTED or ERROR); the API token given at creation is never answered. ` +
    `${paging('B', ['name', 'slug', 'status', 'url', 'createdAt', 'modifiedAt'])} ${VIEWER}`,
  IntegrationsController_deleteDashboard:
    `Deletes the dashboard integration and its stored API token; the slug becomes free again. ${ADMIN} 404 when no integration has this slug in the organisation.`,
  IntegrationsController_update:
    "Changes the display name, enabled flag or config of the organisation's integration; a given `config` replaces the old one whole (string values only, at most 50 keys). " +
    '`organisationIntegrationIdentity` in the body must equal the identity in the path (400). Changes are audited with secret values redacted. ' +
    `${ADMIN} 404 when the integration is not in the organisation.`,
  SilencesController_expire:
    'Ends a pending or active silence now: its endsAt becomes the current time and the alerts it muted count as firing again. The silence stays in the list as expired. ' +
    `${MEMBER} 404 when the silence is not in the tenant; 409 when it has already expired.`,

  // ---- Environments -------------------------------------------------------------------------------
  EnvironmentsController_list:
    `The environments of the organisation that are not deleted; \`show-compute\` adds the cpu and memory of their clusters. ${paging('A', ['id', 'name', 'slug', 'type', 'createdAt', 'modifiedAt'])} ${VIEWER}`,
  EnvironmentsController_create:
    'Creates an environment. Its slug is derived from the name (lower case letters, digits and dashes, at most 63 characters) and must be unique among the organisation\'s environments; ' +
    `a name without letters or digits, or one whose slug is a word reserved in environment paths (such as \`count\`, \`types\`), is 400. ${MEMBER} 409 when the slug is taken.`,
  EnvironmentsController_count: `The number of environments of the organisation that are not deleted. ${VIEWER}`,
  EnvironmentsController_get:
    `One environment by slug; \`show-compute\` adds the cpu and memory of its clusters. ${VIEWER} 404 when the environment does not exist in the organisation.`,
  EnvironmentsController_update:
    `Changes the name, description, purpose or type of the environment; only the given fields change. The slug, and so every URL of the environment, stays as created. ${MEMBER} ` +
    '404 when the environment does not exist.',
  EnvironmentsController_delete:
    `Deletes the environment (soft delete, audited). Refused with 409 while it still holds clusters that are not deleted: delete those first. ${MEMBER} ` +
    '404 when the environment does not exist.',
  EnvironmentsController_members:
    "Every member of the organisation with the kubernetesRole that applies in this environment: the environment's override where one is set, else the member's organisation-wide kubernetesRole. " +
    `${paging('B', ['email', 'createdAt', 'kubernetesRole', 'memberIdentity'])} ${VIEWER} 404 when the environment does not exist.`,
  EnvironmentsController_setMember:
    "Sets the member's kubernetesRole in this environment (an override of the organisation-wide role), creating or changing the override; audited. " +
    `It grants cluster access, hence ADMIN. Only an OWNER may change an OWNER's access (403). Answers the environment's member list. ${ADMIN} ` +
    '404 when the environment or the membership does not exist.',
  EnvironmentsController_removeMember:
    "Removes the member's override in this environment; the member's organisation-wide kubernetesRole applies there again. Only an OWNER may change an OWNER's access (403). " +
    `${ADMIN} 404 when the environment or the membership does not exist, or the member has no override here.`,

  // ---- Cloud accounts and credentials -------------------------------------------------------------
  CloudAccountsController_list:
    '`display-name` keeps the accounts whose display name contains the text (case-insensitive); `cloud-provider-slug` keeps those of one provider. ' +
    `${paging('B', ['displayName', 'enabled', 'createdAt', 'modifiedAt'])} ${VIEWER}`,
  CloudAccountsController_create:
    'Creates a cloud account from an enabled cloud profile of the catalog (its identity or slug), which decides the provider. ' +
    'A profile that is unknown, disabled, or of a provider not available to the organisation is 400. The account starts without credentials: add them with the credentials POST of its platform. ' +
    ADMIN,
  CloudAccountsController_get: `One cloud account with its provider, enabled flag and primary credentials (no secrets). ${VIEWER} 404 when the account is not in the organisation.`,
  CloudAccountsController_update:
    "Changes the display name or the enabled flag, or makes other credentials of the account primary (`primaryCloudCredentials`, which must be credentials of this account, else 400). " +
    `Only the given fields change; changes are audited. ${ADMIN} 404 when the account is not in the organisation.`,
  CloudAccountsController_delete:
    'Deletes the cloud account and its credentials. Refused with 409 while a cluster that is not deleted uses it, and for 24 hours after the last of its clusters was deleted ' +
    `(the message says from when it can be deleted). ${ADMIN} 404 when the account is not in the organisation.`,
  CloudCredentialsController_list:
    `The credentials of the cloud account: display name, platform (cloudType), isPrimary, metadata and dates; the secret values are never answered. ` +
    `${paging('B', ['displayName', 'createdAt'])} ${VIEWER} 404 when the account is not in the organisation.`,
  CloudCredentialsController_createPlatform1: credentials('platform_1 (access key id and secret access key)'),
  CloudCredentialsController_createPlatform2: credentials('platform_2 (a service principal: clientId, clientSecret, tenantId and subscriptionId)'),
  CloudCredentialsController_createPlatform3: credentials('platform_3 (an API token)'),
  CloudCredentialsController_createPlatform4: credentials('platform_4 (an API key and its secret)'),
  CloudCredentialsController_createPlatform5: credentials('platform_5 (a service account key: a JSON string holding client_email and private_key)'),
  CloudCredentialsController_createPlatform6: credentials('platform_6 (an API token)'),
  CloudCredentialsController_createPlatform7: credentials('platform_7 (applicationKey, applicationSecret, consumerKey and projectId)'),
  CloudCredentialsController_createByon: credentials('a byon account (bring your own nodes: no secret, only a display name)'),
  CloudCredentialsController_createNone: credentials('a `none` account (no secret, only a display name)'),
  CloudCredentialsController_createEmpty: credentials('an `empty` account (no secret, only a display name)'),
  CloudCredentialsController_delete:
    'Deletes the credentials. Refused with 409 while they are the primary credentials of an account that has clusters, or while a cluster uses them. ' +
    `Deleting the primary credentials of an account without clusters makes the newest remaining credentials primary. ${ADMIN} 404 when the account or the credentials are not found.`,

  // ---- Maintenance schedules ----------------------------------------------------------------------
  MaintenanceController_list:
    `Every maintenance schedule of the organisation with its weekly windows, time zone and exclusions, as a plain array. ${VIEWER}`,
  MaintenanceController_create:
    'Creates a maintenance schedule: one or more weekly windows (day, start time HH:mm and duration in minutes), which must not overlap each other (400 naming the pair), ' +
    `an IANA time zone (default UTC), and optional exclusions (periods without maintenance). Clusters refer to it by identity; upgrades scheduled for them are placed into its windows. ${MEMBER}`,
  MaintenanceController_get: `One maintenance schedule by identity. ${VIEWER} 404 when the schedule is not in the organisation.`,
  MaintenanceController_update:
    'Changes the name, windows, time zone or exclusions; each list that is given replaces the old list whole, fields left out stay. The windows must still not overlap (400). ' +
    `${MEMBER} 404 when the schedule is not in the organisation.`,
  MaintenanceController_delete:
    `Deletes the maintenance schedule. Refused with 409 while clusters use it: move them to another schedule (or none) first. ${MEMBER} 404 when the schedule is not in the organisation.`,

  // ---- Scheduled cluster upgrades -----------------------------------------------------------------
  ScheduledClusterUpgradesController_list:
    '`clusterIdentities` and `statuses` (each repeatable) narrow the list to those clusters and states. ' +
    `${paging('B', ['createdAt', 'modifiedAt', 'windowStart', 'windowEnd', 'status', 'clusterSlug', 'environmentSlug', 'organisationSlug'])} ${VIEWER}`,
  ScheduledClusterUpgradesController_get:
    `One scheduled upgrade of a cluster of the organisation: from and to version, window, status and reason. ${VIEWER} 404 when it is not an upgrade of this organisation.`,
  ScheduledClusterUpgradesController_cancel:
    'Cancels the upgrade (status CANCELLED, audited) and answers it. Only an upgrade that is SCHEDULED or SCHEDULED_NOTIFIED can be cancelled; one that has started or ended is 409. ' +
    `${MEMBER} 404 when it is not an upgrade of this organisation.`,
  ScheduledUpgradesAdminController_list:
    'Scheduled upgrades of every organisation. `clusterIdentities` and `statuses` (each repeatable) narrow the list. ' +
    `${paging('A', ['createdAt', 'modifiedAt', 'windowStart', 'windowEnd', 'status', 'clusterSlug', 'environmentSlug', 'organisationSlug'])} ${PLATFORM_ADMIN}`,
  ScheduledUpgradesAdminController_create:
    'Schedules an upgrade of a cluster (by identity) to `toClusterVersion`, a known version newer than the one it runs (else 400). windowEnd must be after windowStart and in the future (400). ' +
    "Unless `ignoreMaintenanceSchedule` is true, the window moves into the cluster's first maintenance window starting at or after windowStart. " +
    'With `fromClusterVersion`, the cluster must run exactly that version (409 otherwise). The reason defaults to the administrator who scheduled it; audited. ' +
    `${PLATFORM_ADMIN} 404 when the cluster does not exist; 409 when the cluster already has an open upgrade.`,
  ScheduledUpgradesAdminController_get: `One scheduled upgrade of any organisation by identity. ${PLATFORM_ADMIN} 400 when the identity is not a UUID; 404 when it does not exist.`,
  ScheduledUpgradesAdminController_cancel:
    'Cancels an upgrade that is SCHEDULED or SCHEDULED_NOTIFIED (status CANCELLED, audited) and answers it, like the organisation DELETE. ' +
    `${PLATFORM_ADMIN} 404 when it does not exist; 409 when it has started or ended.`,
  ScheduledUpgradesAdminController_put:
    "The original admin client's older update, `{identity, status, reason}`, handled as the PATCH: the reason may always change; the only status a person may set is CANCELLED, from SCHEDULED or SCHEDULED_NOTIFIED " +
    '(the scheduler sets the others: 400), with the reason as the reason of the cancellation. An `identity` in the body must equal the one in the path (400). Audited. ' +
    `${PLATFORM_ADMIN} 404 when it does not exist; 409 for cancelling an upgrade that started or ended.`,
  ScheduledUpgradesAdminController_update:
    'Every field takes effect or is refused, none is ignored. `windowStart`/`windowEnd` (windowEnd after windowStart and in the future) and `toClusterVersion` ' +
    "(or the original admin client's `version`; known and newer than the running version) re-plan an upgrade that has not started (409 otherwise); " +
    'a notified upgrade whose plan changes goes back to SCHEDULED, so the new plan is announced again. `reason` replaces the reason. `status` CANCELLED cancels ' +
    'as DELETE does, with `reason` as the reason of the cancellation, and cannot be combined with a new window or target (400); the current status changes ' +
    'nothing and any other status is 400 (the scheduler sets them). An `identity` in the body must equal the one in the path (400). One audit entry names every change. ' +
    `${PLATFORM_ADMIN} 404 when it does not exist; 409 when it has started or ended.`,

  // ---- Personal access tokens and users -----------------------------------------------------------
  TokensController_list:
    "The caller's personal access tokens with name, type (FULL_ACCESS or READ_ONLY), IP restriction, expiry, last use and whether each is still active; the token values are never answered again. " +
    `${ANY_USER}`,
  TokensController_provision:
    'Creates a personal access token for the caller and answers its value in `token`, this once: only a hash is stored. `type` is FULL_ACCESS (default) or READ_ONLY (GET only). ' +
    '`expireAt` must be in the future and at most a year ahead (default: the configured lifetime); `ipRestriction` is a comma-separated list of addresses or CIDR ranges the token may be used from. ' +
    `Audited, without the value. ${ANY_USER}`,
  TokensController_revoke:
    'Revokes one of the caller\'s own tokens by its id; requests with it are refused (401) from then on. Revoking a token that is already revoked answers 200 again. ' +
    `${ANY_USER} 404 when the caller has no token with this id.`,
  UsersController_add:
    'Creates a user account with username, email and optionally the OIDC subject it signs in with, and whether it may create organisations or is a platform administrator. ' +
    `${PLATFORM_ADMIN} 409 when a user with this email, username or OIDC subject exists.`,

  // ---- Catalog ------------------------------------------------------------------------------------
  CatalogController_getProvider:
    `One cloud provider by slug, whether it is available or not, with its display name and type. ${ANY_USER} 404 when no provider has this slug.`,
  CatalogController_nodeTypes:
    `The node types of the provider: cpu in cores and memory in MiB. ${paging('A', ['type', 'cpu', 'memory'])} ${ANY_USER} 404 when no provider has this slug.`,
  CatalogController_versions:
    'Every cluster version of the catalog, available or withdrawn (see `available`), in ascending semantic-version order, as a plain array. ' +
    `New clusters, upgrades and downgrades use available versions only. ${ANY_USER}`,
  CatalogController_upgrades:
    'The versions a cluster running `version` may move up to: available newer patches of its minor version, and available patches of the next minor (no minor is skipped). ' +
    `Ascending order; empty when there is none. ${ANY_USER} 404 when \`version\` is not a version of the catalog.`,
  CatalogController_downgrades:
    `The versions a cluster running \`version\` may move down to: available older patches of the same minor version. Ascending order; empty when there is none. ${ANY_USER} ` +
    '404 when `version` is not a version of the catalog.',
  CatalogController_environmentTypes: `The values an environment's \`type\` may take, as a plain array of strings. ${ANY_USER}`,
  OrgCatalogController_updateChannels:
    'The update channels (such as stable) with the version each one points to now; a cluster may follow a channel (its `updateChannel`). ' +
    `${paging('A', ['name', 'available'])} ${VIEWER}`,
  OrgCatalogController_environmentTypes:
    `The values the \`type\` of an environment of this organisation may take, as a plain array of strings. ${VIEWER}`,

  // ---- Platform administration: catalog -----------------------------------------------------------
  ClusterVersionsAdminController_create:
    'Adds a cluster version: `version` must be a semantic version (400 otherwise); kubernetesVersion defaults to `v<version>`, available to true. ' +
    `A version that was deleted may be added again. Audited. ${PLATFORM_ADMIN} 409 when the version exists (PATCH it instead).`,
  ClusterVersionsAdminController_available:
    `The versions that new clusters, upgrades and downgrades may use (available true), each with clusterCount. ${paging('A', ['version', 'available', 'createdAt'], 'ascending semantic version')} ${PLATFORM_ADMIN}`,
  ClusterVersionsAdminController_history:
    'Withdrawn versions (available false): older clusters may still run them, but nothing new may move to them. Each carries clusterCount. ' +
    `${paging('A', ['version', 'available', 'createdAt'], 'ascending semantic version')} ${PLATFORM_ADMIN}`,
  ClusterVersionsAdminController_get: `One cluster version of the catalog, available or withdrawn. ${PLATFORM_ADMIN} 404 when the version does not exist.`,
  ClusterVersionsAdminController_update:
    'Makes the version available or withdraws it, or changes its note; only the given fields change. Withdrawing a version that an update channel points to is 409: move the channel first. ' +
    `Withdrawing does not touch the clusters that run it. Audited. ${PLATFORM_ADMIN} 404 when the version does not exist.`,
  ClusterVersionsAdminController_replace:
    'The same change as PATCH, for the original admin client, which sends PUT `{available}`: only the given fields change. ' +
    `Withdrawing a version an update channel points to is 409. Audited. ${PLATFORM_ADMIN} 404 when the version does not exist.`,
  ClusterVersionsAdminController_remove:
    'Deletes the version from the catalog; the start-up catalog load will not bring it back. Refused with 409 while a cluster that is not deleted runs or wants it, ' +
    `an update channel points to it, or an open scheduled upgrade targets it. Audited. ${PLATFORM_ADMIN} 404 when the version does not exist.`,
  UpdateChannelsAdminController_list: `Every update channel with the version it points to. ${paging('A', ['name', 'available'], 'name')} ${PLATFORM_ADMIN}`,
  UpdateChannelsAdminController_create:
    'Adds an update channel pointing to `kubernetesClusterVersion`, which must be a known and available version (400 otherwise); available defaults to true. Audited. ' +
    `${PLATFORM_ADMIN} 409 when a channel of that name exists (PATCH it instead).`,
  UpdateChannelsAdminController_update:
    'Points the channel to another version, which must be known and available (400 otherwise), or sets its availability; only the given fields change. ' +
    `Audited. ${PLATFORM_ADMIN} 404 when the channel does not exist.`,

  // ---- Organisations and members ------------------------------------------------------------------
  OrganisationsController_create:
    'Creates an organisation; its slug is derived from organisationName and the caller becomes its OWNER. The caller needs canCreateOrganisations (403 otherwise). ' +
    '`acceptedAgreements` must include every agreement the service requires, and a `vatNumber` must be a valid VAT number (country prefix, format and check digits); both are 400 otherwise. ' +
    '409 when an organisation with the derived slug exists.',
  OrganisationsController_get:
    `The organisation's details: name, slug, type, company and contact details, VAT code and whether it was validated, accepted terms. ${VIEWER} ${NOT_MEMBER}`,
  OrganisationsController_update:
    'Changes the details of the organisation; only the given fields change, and a new name keeps the slug and so every URL. ' +
    `A vatNumber must be a valid VAT number (400). Audited. ${ADMIN} ${NOT_MEMBER}`,
  OrganisationsController_quotas:
    `The organisation's quotas: clustersPerCustomer, the most clusters the organisation may have (creating one more is 409). ${VIEWER} ${NOT_MEMBER}`,
  OrganisationMembersController_me:
    "The caller's own membership of the organisation: role, kubernetesRole and when they joined. 404 for a platform administrator who reads the organisation without being a member; " +
    'a caller who is neither gets 403.',
  OrganisationMembersController_list:
    `The members of the organisation with username, email, role, kubernetesRole and joinedAt. ${paging('B', ['username', 'email', 'role', 'kubernetesRole', 'joinedAt'])} ${VIEWER}`,
  OrganisationMembersController_remove:
    'Removes a member from the organisation; audited. Only an OWNER may remove an OWNER (403), and the last OWNER cannot be removed (409). ' +
    `${ADMIN} 404 when the organisation has no member with this identity.`,
  OrganisationMembersController_memberships:
    `Every organisation the caller is a member of, with the caller's role there. ${paging('B', ['name', 'slug', 'role', 'joinedAt'])} ${ANY_USER}`,
  OrganisationsAdminController_list:
    `Every organisation of the platform, with its identity, slug, type, VAT code and contact and billing emails. ${paging('A', ['name', 'slug', 'type', 'createdAt'], 'name')} ${PLATFORM_ADMIN}`,

  // ---- Audit, activity, webhooks ------------------------------------------------------------------
  AuditEventsController_list:
    'The full audit trail of the organisation: who did what to which resource, with the old and new value of each changed field (secrets redacted). ' +
    `${paging('B', ['createdAt', 'type'], 'createdAt ascending (oldest first)')} ${VIEWER}`,
  AuditEventsController_forCluster:
    'The audit events of one cluster, found by environment and cluster slug; this includes the events of an earlier, deleted cluster that had the same slug. ' +
    `${paging('B', ['createdAt', 'type'], 'createdAt ascending (oldest first)')} ${VIEWER} 404 when no cluster, current or deleted, had this slug in the environment.`,
  ActivityController_list:
    'The human-readable activity feed of the organisation: one line per notable change (clusters created, upgraded, deleted, members added and the like), with who did it. ' +
    `${paging('B', ['createdAt', 'type'], 'createdAt descending (newest first)')} ${VIEWER}`,
  WebhooksController_get:
    `One webhook subscription: URL, event types, enabled flag and delivery health; the signing secret is never answered here. ${ADMIN} 404 when the subscription is not in the organisation.`,
  WebhooksController_remove:
    `Deletes the webhook subscription and its pending deliveries; nothing more is sent to its URL. Audited. ${ADMIN} 404 when the subscription is not in the organisation.`,
  WebhooksController_deliveries:
    'The deliveries of the subscription with status, attempts, last response code and next attempt. A failed attempt is retried after 5 s, 1 min, 5 min, 30 min, 2 h, 5 h and 10 h (at most 8 attempts) before the delivery is FAILED; it can be sent again by hand (redeliver). ' +
    `${paging('A', ['createdAt', 'status', 'eventType', 'attempts'], 'createdAt descending (newest first)')} ${ADMIN} 404 when the subscription is not in the organisation.`,
};
