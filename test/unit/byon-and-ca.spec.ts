import { X509Certificate } from 'crypto';
import { parse } from 'yaml';
import { clusterDnsAddress, componentsFor, installScript, kubeletConfig, NodeJoinInputs, nodeLabels, shellQuote } from '../../src/clusters/byon/node-join-content';
import { checkByonPool, checkByonRegion } from '../../src/clusters/byon/byon-rules';
import { createSelfSignedCa } from '../../src/provisioning/self-signed-ca';

describe('self-signed cluster CA', () => {
  it('is a valid, self-verifying CA certificate for the name given', () => {
    const now = new Date('2026-11-23T10:00:00Z');
    const ca = createSelfSignedCa('kubernetes-ca web.example', now, 365);
    const x = new X509Certificate(ca.certificatePem);
    expect(x.ca).toBe(true);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.subject).toContain('CN=kubernetes-ca web.example');
    expect(x.issuer).toBe(x.subject);
    expect(new Date(x.validFrom).getTime()).toBe(now.getTime() - 5 * 60 * 1000);
    expect(new Date(x.validTo).getTime()).toBe(now.getTime() - 5 * 60 * 1000 + 365 * 24 * 3600 * 1000);
    expect(x.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(ca.fingerprint256).toBe(x.fingerprint256);
  });

  it('uses GeneralizedTime past 2049 and differs per call', () => {
    const a = createSelfSignedCa('a', new Date('2045-01-01T00:00:00Z'), 3650);
    expect(new Date(new X509Certificate(a.certificatePem).validTo).getUTCFullYear()).toBe(2054);
    expect(createSelfSignedCa('a', new Date()).certificatePem).not.toBe(createSelfSignedCa('a', new Date()).certificatePem);
  });
});

describe('bring-your-own-node content', () => {
  it('puts the cluster DNS at the tenth address of the service subnet', () => {
    expect(clusterDnsAddress(null)).toBe('10.96.0.10');
    expect(clusterDnsAddress('10.100.0.0/16')).toBe('10.100.0.10');
    expect(clusterDnsAddress('172.20.5.7/24')).toBe('172.20.5.10');
    expect(clusterDnsAddress('fd00:10:96::/112')).toBe('fd00:10:96::a');
  });

  it('picks component versions per minor, the newest row for an unknown minor', () => {
    expect(componentsFor('1.29.10').crictl).toBe('1.29.0');
    expect(componentsFor('v1.32.1').containerd).toBe('2.0.2');
    expect(componentsFor('1.40.0')).toEqual(componentsFor('1.32.0'));
  });

  it('quotes shell values and keeps hostile labels out of the script structure', () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    const inputs: NodeJoinInputs = {
      clusterName: 'acme/production/web',
      nodePoolName: 'workers',
      nodePoolIdentity: '00000000-0000-4000-8000-000000000000',
      kubernetesVersion: '1.31.5',
      components: componentsFor('1.31.5'),
      apiEndpoint: 'https://api.example:6443',
      caCertificate: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
      serviceSubnet: null,
      labels: {},
      taints: [{ key: 'k', value: 'v', effect: 'NoExecute' }],
      registrationUrl: 'https://cms.example',
    };
    expect(parse(kubeletConfig(inputs)).registerWithTaints).toEqual([{ key: 'k', value: 'v', effect: 'NoExecute' }]);
    expect(installScript(inputs)).toContain(`KUBERNETES_VERSION='1.31.5'`);
    // Labels reach the kubelet unit only when they are valid Kubernetes labels: nothing else lands in the script.
    const hostile = { ...inputs, labels: { team: 'web', 'example.com/tier': 'front_1', evil: 'x\nUNIT\ntouch /pwned', 'a b': 'c', ok: '' } };
    expect(nodeLabels(hostile)).toBe('node.cluster-management.example.com/pool=workers,team=web,example.com/tier=front_1,ok=');
    expect(installScript(hostile)).not.toContain('pwned');
  });

  it('validates BYON location and node size labels', () => {
    expect(() => checkByonRegion('amsterdam-dc2')).not.toThrow();
    expect(() => checkByonRegion('-bad')).toThrow();
    expect(() => checkByonRegion('x'.repeat(64))).toThrow();
    expect(() => checkByonPool({ name: 'w', nodeSize: 'bare-metal-32c', minSize: 0, maxSize: 1 })).not.toThrow();
    expect(() => checkByonPool({ name: 'w', nodeSize: 'Big Box', minSize: 0, maxSize: 1 })).toThrow();
    expect(() => checkByonPool({ name: 'w', nodeSize: 'box', minSize: 2, maxSize: 1 })).toThrow();
    expect(() => checkByonPool({ name: 'w', nodeSize: 'box', minSize: 0, maxSize: 1, availabilityZone: 'Rack 1' })).toThrow();
  });
});
