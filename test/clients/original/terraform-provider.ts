/**
 * What the original Terraform provider (terraform-provider-acloud, built on the original Go client) puts in its
 * requests, written from reading it (not copied): the shapes and the values it always sends.
 */

/**
 * The add-on map the provider sends on every cluster create and every add-on change (its defaults, merged with the
 * configured ones): camelCase names, two of them enabled, custom values as strings.
 */
export function providerDefaultAddons(): Record<string, { enabled: boolean; customValues: Record<string, string> }> {
  const off = () => ({ enabled: false, customValues: {} as Record<string, string> });
  return {
    fluxOperator: off(),
    ingressController: { enabled: false, customValues: { type: 'ingress-nginx' } },
    defaultNetworkPolicies: { enabled: true, customValues: {} },
    sealedSecrets: off(),
    amePool: off(),
    certManager: off(),
    cloudNativePG: off(),
    logging: off(),
    nfs: off(),
    monitoring: off(),
    gpu: off(),
    kured: {
      enabled: true,
      customValues: { endTime: '06:00', timeZone: 'UTC', startTime: '0:00', rebootDays: 'sun,mon,tue,wed,thu,fri,sat', forceReboot: 'false' },
    },
  };
}

/** The provider's names that have no add-on in this catalog (all disabled in its defaults). */
export const PROVIDER_ADDONS_WITHOUT_COUNTERPART = ['fluxOperator', 'sealedSecrets', 'amePool', 'cloudNativePG', 'logging', 'nfs', 'gpu'];

/**
 * The cluster create body of the provider's `acloud_cluster` with its schema defaults: every boolean of the client's
 * CreateCluster struct is sent (no omitempty), `environmentId` and `cloudAccountIdentity` always, `nodePools` as an
 * empty list, and the default add-ons.
 */
export function providerClusterCreate(opts: { name: string; cloudAccountIdentity: string; region: string; version: string }): Record<string, unknown> {
  return {
    name: opts.name,
    environmentId: '',
    cloudAccountIdentity: opts.cloudAccountIdentity,
    region: opts.region,
    version: opts.version,
    enableNATGateway: false,
    enableNetworkEncryption: true,
    enablePodSecurityStandards: false,
    podSecurityStandardsProfile: 'PRIVILEGED',
    enableMultiAvailabilityZones: true,
    enableAutoUpgrade: false,
    enableHighAvailability: false,
    nodePools: [],
    addons: providerDefaultAddons(),
  };
}
