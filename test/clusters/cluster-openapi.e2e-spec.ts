import { startTestApp, TestApp } from '../support/test-app';

describe('clusters in the OpenAPI document', () => {
  let t: TestApp;
  let doc: any;

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.http().get('/v3/api-docs')).body;
  });
  afterAll(() => t.close());

  it('documents every cluster and node pool operation with its responses', () => {
    const ops: [string, string, string[]][] = [
      ['/api/v1/orgs/{organisationSlug}/clusters', 'get', ['200', '401', '403']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}', 'get', ['200', '404']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}', 'post', ['200', '400', '409']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}', 'get', ['200', '404']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}', 'patch', ['200', '400', '409']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}', 'delete', ['200', '409']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}/pools', 'get', ['200']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}/pools', 'post', ['200', '409']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}/pools/{nodePoolId}', 'put', ['200', '409']],
      ['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}/{clusterSlug}/pools/{nodePoolId}', 'delete', ['204', '409']],
      ['/api/v1/orgs/{organisationSlug}/cloud-accounts/{cloudAccountIdentity}/clusters', 'get', ['200', '404']],
      ['/admin/v1/clusters', 'get', ['200']],
    ];
    for (const [path, method, codes] of ops) {
      const op = doc.paths[path]?.[method];
      expect({ path, method, documented: !!op }).toEqual({ path, method, documented: true });
      for (const c of codes) expect({ path, method, code: c, has: !!op.responses[c] }).toEqual({ path, method, code: c, has: true });
      expect(op.summary).toEqual(expect.any(String));
    }
    const envList = doc.paths['/api/v1/orgs/{organisationSlug}/clusters/{environmentSlug}'].get.parameters.map((p: { name: string }) => p.name);
    expect(envList).toEqual(expect.arrayContaining(['show-compute', 'includeDetails', 'page', 'size', 'sort']));
    const orgList = doc.paths['/api/v1/orgs/{organisationSlug}/clusters'].get.parameters.map((p: { name: string }) => p.name);
    expect(orgList).toEqual(expect.arrayContaining(['maintenanceSchedule', 'includeDetails']));
  });

  it('describes the request and response schemas with enums and bounds', () => {
    const s = doc.components.schemas;
    expect(s.CreateClusterRequest.required).toEqual(expect.arrayContaining(['name', 'cloudAccountIdentity', 'region', 'version', 'nodePools']));
    expect(s.CreateClusterRequest.properties.cni.enum).toEqual(['custom', 'cilium', 'calico']);
    expect(s.CreateClusterRequest.properties.enablePodSecurityStandards.deprecated).toBe(true);
    expect(s.CreateClusterNodePoolDto.properties.name).toMatchObject({ pattern: '^[a-z0-9-]+$', minLength: 1, maxLength: 25 });
    expect(s.CreateClusterNodePoolDto.properties.upgradeStrategy.enum).toHaveLength(5);
    expect(s.UpdateClusterRequest.properties.status.enum).toEqual(['starting', 'stopping', 'deleting']);
    for (const k of ['actualState', 'addons', 'cloudAccount', 'customerSlug', 'desiredStatus', 'maintenanceSchedule', 'observabilityTenant', 'provisionStatus', 'updateChannel', 'clusterAutoscalerSettings', 'upstreamCluster', 'downstreamClusters', 'enableNATGateway', 'platformOIDC', 'poolID']) {
      expect({ k, has: k in s.ClusterResponse.properties }).toEqual({ k, has: true });
    }
    expect(s.ClusterResponse.properties.status.enum).toHaveLength(10);
    expect(Object.keys(s.ClusterAutoscalerSettingsDto.properties)).toHaveLength(7);
    expect(Object.keys(s.NodePoolResponse.properties)).toEqual(
      expect.arrayContaining(['id', 'identity', 'name', 'availabilityZone', 'nodeSize', 'autoScaling', 'minSize', 'maxSize', 'enableNodeAutoReplacement', 'enableNodeReboots', 'upgradeStrategy', 'annotations', 'labels', 'taints', 'provisionStatus', 'createdAt', 'modifiedAt']),
    );
  });
});
