import type { CreateClusterPolicyRequest } from './dto/cluster-policy.dto';

/**
 * The ready policies of docs/policies.md, offered as OpenAPI examples of the create and evaluate operations.
 * test/policies/policy-scans.e2e-spec.ts checks each one (accepted at write time, passing and failing clusters)
 * and that docs/policies.md shows the same bodies; test/policies/policy-examples.e2e-spec.ts checks the OpenAPI
 * examples and the ones judged on a change (oldObject, request, Warn, Audit) on real changes.
 */
export const POLICY_EXAMPLES: { summary: string; body: CreateClusterPolicyRequest }[] = [
  {
    summary: 'Production clusters are highly available',
    body: {
      name: 'production-highly-available',
      description: 'A production cluster is created with a highly available control plane (its later changes and its deletion are not judged).',
      expression: 'object.highlyAvailable',
      message: 'production clusters must be highly available (enableHighAvailability: true)',
      action: 'Deny',
      environmentTypes: ['production'],
      operations: ['CREATE'],
    },
  },
  {
    summary: 'deleteProtection stays on in production',
    body: {
      name: 'keep-delete-protection',
      description: 'Once a production cluster is delete-protected, the protection cannot be removed.',
      expression: 'oldObject == null || !oldObject.deleteProtection || object.deleteProtection',
      message: 'deleteProtection cannot be removed from a production cluster',
      action: 'Deny',
      environmentTypes: ['production'],
    },
  },
  {
    summary: 'Pod Security Standards: restricted',
    body: {
      name: 'pod-security-restricted',
      description: 'Workloads run under the restricted Pod Security Standards profile.',
      expression: "object.podSecurityStandardsProfile == 'restricted'",
      message: 'podSecurityStandardsProfile must be restricted',
      messageExpression: "'podSecurityStandardsProfile is ' + string(object.podSecurityStandardsProfile) + ', it must be restricted'",
      action: 'Deny',
    },
  },
  {
    summary: 'Node pools within a size',
    body: {
      name: 'node-pool-size',
      description: 'Every node pool keeps at least 1 and at most 20 nodes.',
      expression: 'object.nodePools.all(p, p.minSize >= 1 && p.maxSize <= 20)',
      message: 'node pools must have minSize >= 1 and maxSize <= 20',
      messageExpression:
        "'node pools out of bounds (1..20): ' + object.nodePools.filter(p, p.minSize < 1 || p.maxSize > 20).map(p, p.name).join(', ')",
      action: 'Deny',
    },
  },
  {
    summary: 'No version downgrade',
    body: {
      name: 'no-version-downgrade',
      description: 'A cluster (or a scheduled upgrade of it) never moves to an older Kubernetes version.',
      expression: 'oldObject == null || semverCompare(object.version, oldObject.version) >= 0',
      message: 'the cluster version cannot go back',
      messageExpression: "'the version cannot go back from ' + oldObject.version + ' to ' + object.version",
      action: 'Deny',
    },
  },
  {
    summary: 'Approved regions only',
    body: {
      name: 'approved-regions',
      description: 'Clusters run in the regions the platform team approved.',
      expression: "object.region in ['eu-central-1', 'eu-west-1', 'ams1']",
      message: 'clusters must run in eu-central-1, eu-west-1 or ams1',
      messageExpression: "'region ' + object.region + ' is not approved (eu-central-1, eu-west-1, ams1)'",
      action: 'Deny',
    },
  },
  {
    summary: 'Node pools carry a team label',
    body: {
      name: 'node-pools-team-label',
      description: 'Every node pool says which team owns it (label "team").',
      expression: "object.nodePools.all(p, 'team' in p.labels && p.labels['team'] != '')",
      message: 'every node pool needs a non-empty "team" label',
      messageExpression: "'node pools without a team label: ' + object.nodePools.filter(p, !('team' in p.labels) || p.labels['team'] == '').map(p, p.name).join(', ')",
      action: 'Deny',
    },
  },
  {
    summary: 'Production follows a release channel',
    body: {
      name: 'production-release-channel',
      description: 'Production clusters auto-upgrade on the stable or regular update channel.',
      expression: "object.autoUpgrade && object.updateChannel != null && object.updateChannel.name in ['stable', 'regular']",
      message: 'production clusters must auto-upgrade on the stable or regular update channel',
      action: 'Warn',
      environmentTypes: ['production'],
    },
  },
  {
    summary: 'Network encryption (audit only)',
    body: {
      name: 'network-encryption',
      description: 'Records clusters changed without network encryption, without refusing the change.',
      expression: 'object.enableNetworkEncryption',
      message: 'the cluster runs without network encryption',
      action: 'Audit',
    },
  },
  {
    summary: 'Only platform administrators delete production clusters',
    body: {
      name: 'production-delete-by-platform-admins',
      description: 'Deleting a production cluster is left to platform administrators.',
      expression: "request.operation != 'DELETE' || request.user.platformAdmin",
      message: 'only platform administrators may delete production clusters',
      action: 'Deny',
      environmentTypes: ['production'],
    },
  },
];

/** The example of PATCH .../cluster-policies/{policyIdentity}: a change of the demo policy that keeps it valid. */
export const POLICY_UPDATE_EXAMPLES = {
  message: { summary: 'Reword the message', value: { message: 'production clusters should be highly available; set enableHighAvailability: true' } },
  disable: { summary: 'Keep the policy without enforcing it', value: { enabled: false } },
};
