/**
 * The structs the original Go client (avisi-cloud/go-client, pkg/acloudapi) decodes answers into, written from
 * reading it: JSON names and Go types only. `needed` marks the fields its callers (and the Terraform provider)
 * rely on.
 */
import { any, bool, float, int, map, needed, ptr, slice, str, struct, time } from './go-json';

export const Sort = struct('Sort', { sorted: bool, unsorted: bool, empty: bool });
export const PagedResult = struct('PagedResult', {
  content: needed(slice(any)),
  pageable: any,
  last: needed(bool), // without it the client pages until its loop limit and fails
  totalPages: int,
  totalElements: int,
  numberOfElements: int,
  number: int,
  sort: Sort,
  first: bool,
  size: int,
  empty: bool,
});
export const ErrorBody = struct('Error', { message: str });

export const CloudAccountReference = struct('CloudAccountReference', { identity: str, displayName: str });
export const CloudCredentialsReference = struct('CloudCredentialsReference', { identity: str, displayName: str });
export const UpdateChannelResponse = struct('UpdateChannelResponse', { name: needed(str), available: bool, kubernetesClusterVersion: str });
export const IpWhitelistResponse = struct('IpWhitelistResponse', { cidr: str, description: str });
export const APIAddon = struct('APIAddon', { enabled: bool, customValues: map(str) });
export const MaintenanceWindow = struct('MaintenanceWindow', { day: str, startTime: str, duration: int });
export const MaintenanceSchedule = struct('MaintenanceSchedule', { identity: needed(str), name: str, windows: slice(MaintenanceWindow) });
export const AutoscalerSettings = struct('AutoscalerSettings', {
  'scale-down-utilization-threshold': ptr(float),
  'scale-down-gpu-utilization-threshold': ptr(float),
  'scale-down-delay-after-add': ptr(str),
  'scale-down-unneeded-time': ptr(str),
  'scale-down-unready-time': ptr(str),
  'max-node-provision-time': ptr(str),
  'unremovable-node-recheck-timeout': ptr(str),
});
export const UpstreamCluster = struct('UpstreamCluster', { identity: str, slug: str, environmentSlug: str, version: str });
export const ObservabilityTenant = struct('ObservabilityTenant', {
  identity: needed(str),
  customer: str,
  name: str,
  slug: needed(str),
  available: bool,
  ipWhiteList: str,
  createdAt: time,
  modifiedAt: time,
  DeletedAt: ptr(time),
});

export const Cluster = struct('Cluster', {
  name: needed(str),
  identity: needed(str),
  environmentIdentity: str,
  environmentSlug: needed(str),
  customerIdentity: str,
  customerSlug: str,
  slug: needed(str),
  cni: str,
  description: str,
  cloudProvider: str,
  cloudAccount: ptr(CloudAccountReference),
  cloudCredentials: ptr(CloudCredentialsReference),
  region: str,
  version: needed(str),
  updateChannel: ptr(UpdateChannelResponse),
  autoUpgrade: bool,
  highlyAvailable: bool,
  enableNetworkEncryption: bool,
  enablePodSecurityStandards: bool,
  podSecurityStandardsProfile: str,
  enableMultiAvailabilityZones: bool,
  enableNATGateway: bool,
  status: needed(str),
  desiredStatus: str,
  provisionStatus: str,
  createdAt: time,
  modifiedAt: time,
  deletedAt: ptr(time),
  memory: int,
  cpu: int,
  ipWhitelist: slice(IpWhitelistResponse),
  ameOIDC: bool,
  deleteProtection: bool,
  addons: map(APIAddon),
  observabilityTenant: ptr(ObservabilityTenant),
  environmentPrometheusRules: bool,
  maintenanceSchedule: ptr(MaintenanceSchedule),
  clusterAutoscalerSettings: ptr(AutoscalerSettings),
  upstreamCluster: ptr(UpstreamCluster),
});

export const NodeTaint = struct('NodeTaint', { key: str, value: str, effect: str });
export const NodePool = struct('NodePool', {
  id: needed(int),
  identity: needed(str),
  name: needed(str),
  availabilityZone: str,
  nodeSize: str,
  autoScaling: bool,
  minSize: int,
  maxSize: int,
  enableNodeAutoReplacement: bool,
  enableNodeReboots: bool,
  upgradeStrategy: str,
  securityUpdatesOnJoin: str,
  annotations: map(str),
  labels: map(str),
  taints: slice(NodeTaint),
  provisionStatus: str,
  createdAt: time,
  modifiedAt: time,
  clusterIdentity: str,
});
export const NodePoolJoinConfig = struct('NodePoolJoinConfig', {
  versions: struct('NodeJoinConfigVersions', { cloudInit: str, kubernetes: str, containerd: str, crictl: str }),
  cloudInitUserDataBase64: needed(str),
  installScriptBase64: needed(str),
  upgradeScriptBase64: str,
  joinCommand: needed(str),
  kubeletConfigBase64: str,
});
export const ClusterMetadataResponse = struct('ClusterMetadataResponse', {
  endpoint: needed(str),
  caCertificate: needed(str),
  clientId: needed(str),
  clientSecret: str,
  issuerUrl: str,
});
export const ClusterVersion = struct('ClusterVersion', { version: needed(str) });
export const Membership = struct('Membership', { email: str, id: str, name: str, slug: needed(str) });
export const CloudProvider = struct('CloudProvider', { id: int, name: str, slug: needed(str), available: bool, createdAt: time, modifiedAt: time });
export const Region = struct('Region', {
  id: int,
  provider: str,
  name: str,
  slug: needed(str),
  available: bool,
  restricted: bool,
  createdAt: time,
  modifiedAt: time,
});
export const AvailabilityZone = struct('AvailabilityZone', { id: int, name: str, slug: needed(str), createdAt: time, modifiedAt: time });
export const Environment = struct('Environment', {
  id: int,
  name: needed(str),
  purpose: str,
  type: str,
  description: str,
  createdAt: time,
  modifiedAt: time,
  deletedAt: ptr(time),
  totalClusters: int,
  totalCpu: int,
  totalMemory: int,
  slug: needed(str),
  organisationSlug: str,
});
export const NodeType = struct('NodeType', { type: needed(str), cpu: int, memory: int });
export const SilenceMatcher = struct('SilenceMatcher', { name: str, value: str, isRegex: bool, isEqual: bool });
export const Silence = struct('Silence', {
  id: needed(str),
  matchers: slice(SilenceMatcher),
  startsAt: time,
  endsAt: time,
  createdBy: str,
  comment: str,
  status: struct('SilenceStatus', { state: needed(str) }),
});
export const ScheduledClusterUpgrade = struct('ScheduledClusterUpgrade', {
  identity: needed(str),
  clusterIdentity: needed(str),
  createdAt: time,
  modifiedAt: time,
  windowStart: time,
  windowEnd: time,
  fromClusterVersion: str,
  toClusterVersion: needed(str),
  status: needed(str),
  reason: str,
  scheduleRequestDate: time,
  ignoreMaintenanceSchedule: bool,
});
export const CloudProfile = struct('CloudProfile', {
  identity: needed(str),
  displayName: str,
  metadata: map(str),
  cloudProvider: str,
  regions: slice(str),
  enabled: bool,
  public: bool,
  type: needed(str),
  cloudProviderResponse: CloudProvider,
  cloudProviderRegionResponses: slice(Region),
});
export const CloudAccount = struct('CloudAccount', {
  identity: needed(str),
  displayName: needed(str),
  metadata: struct('CloudAccountMetadata', { parentResourcePool: ptr(str), parentFolder: ptr(str), tenantId: ptr(str) }),
  cloudProfile: needed(CloudProfile),
  enabled: bool,
  primaryCloudCredentialsIdentity: str,
});
export const CloudCredential = struct('CloudCredential', {
  identity: needed(str),
  cloudAccountIdentity: str,
  cloudType: str,
  displayName: str,
  metadata: map(str),
  isPrimary: bool,
  createdAt: time,
});
export const Organisation = struct('Organisation', {
  id: str,
  name: needed(str),
  vatCode: str,
  companyName: str,
  companyAddress: str,
  contactEmail: str,
  billingEmail: str,
  vatCodeValidated: bool,
  vatCodeValidatedAt: time,
  phoneNumber: str,
  createdAt: time,
  acceptedTerms: bool,
  acceptedTermsAt: time,
  restrictedToAvailableCloudProviders: bool,
  type: str,
  slug: needed(str),
});
export const AdminOrganisation = struct('AdminOrganisation', {
  id: needed(str),
  name: needed(str),
  vatCode: str,
  contactEmail: str,
  billingEmail: str,
  vatCodeValidated: bool,
  vatCodeValidatedAt: time,
  phoneNumber: str,
  createdAt: time,
  acceptedTerms: bool,
  acceptedTermsAt: time,
  restrictedToAvailableCloudProviders: bool,
  stripeCustomer: str,
  slug: needed(str),
});
export const ObservabilityAlert = struct('ObservabilityAlert', {
  labels: needed(map(str)),
  annotations: map(str),
  activeAt: needed(time),
  state: needed(str),
  value: str,
});
export const AlertmanagerAndRules = struct('ObservabilityAlertmanagerAndPrometheusrulesResponse', {
  ruleFiles: map(str),
  templateFiles: map(str),
  alertManagerConfig: str,
});
export const AdminClusterVersion = struct('AdminClusterVersion', {
  version: needed(str),
  kubernetesVersion: str,
  clusterControllerVersion: str,
  addonControllerVersion: str,
  available: bool,
  createdAt: time,
  modifiedAt: time,
  deletedAt: ptr(time),
  note: str,
  clusterCount: int,
});
