import { execFileSync } from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/app-config';

/**
 * The Kubernetes manifests as an operator applies them: each overlay of deploy/ rendered by `kubectl kustomize` (the
 * kubectl on the PATH, or KUBECTL; Debian's kubernetes-client package brings one, and npm test's pretest (scripts/test-tools.sh) installs it when none
 * is there), every rendered object validated against the Kubernetes, Prometheus Operator and CloudNativePG JSON
 * schemas (the `kubernetes-models` packages carry them; no cluster is needed), and the operational rules checked on
 * what would be applied: a namespace on every object, no `replicas` beside an HPA, a PodDisruptionBudget for the API
 * and the workers, no ServiceAccount token in the pods, a NetworkPolicy around every pod, the migration Job.
 */
const ROOT = path.resolve(__dirname, '../..');
const DEPLOY = path.join(ROOT, 'deploy');
const OVERLAYS = { dev: 'cluster-management-dev', production: 'cluster-management' } as const;
const MIGRATE_COMMAND = ['node', 'dist/scripts/migrate.js'];

type Labels = Record<string, string>;
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Labels; annotations?: Labels };
  spec?: Record<string, unknown>;
  [key: string]: unknown;
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: { name: string; value?: string }[];
  envFrom?: { secretRef?: { name: string }; configMapRef?: { name: string } }[];
  securityContext?: Record<string, unknown>;
  readinessProbe?: unknown;
  livenessProbe?: unknown;
  startupProbe?: unknown;
}
interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  securityContext?: Record<string, unknown>;
  containers: Container[];
}
interface PodTemplate {
  metadata: { labels: Labels };
  spec: PodSpec;
}
interface Workload extends K8sObject {
  spec: { replicas?: number; selector?: { matchLabels: Labels }; template: PodTemplate; [key: string]: unknown };
}
interface NetworkPolicyPeer {
  namespaceSelector?: { matchLabels?: Labels };
  podSelector?: { matchLabels?: Labels };
  ipBlock?: { cidr: string; except?: string[] };
}
interface NetworkPolicyRule {
  from?: NetworkPolicyPeer[];
  to?: NetworkPolicyPeer[];
  ports?: { protocol?: string; port?: number | string }[];
}
interface NetworkPolicy extends K8sObject {
  spec: { podSelector: { matchLabels?: Labels }; policyTypes: string[]; ingress?: NetworkPolicyRule[]; egress?: NetworkPolicyRule[] };
}

/** Kinds that have no namespace (everything else the overlays render must carry one). */
const CLUSTER_SCOPED = new Set(['Namespace']);

/** `kubectl kustomize <dir>`, parsed; a clear error when kubectl is missing. */
function kustomize(dir: string, kubectl = process.env.KUBECTL || 'kubectl'): K8sObject[] {
  let out: string;
  try {
    out = execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 16 * 1024 * 1024 });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: string };
    if (err.code === 'ENOENT') {
      throw new Error(
        `kubectl not found (${kubectl}): the deploy/ overlays are rendered with \`kubectl kustomize\`. Install Debian's ` +
          'kubernetes-client package (apt-get install kubernetes-client), which the pretest of npm test (scripts/test-tools.sh) does when kubectl is missing, ' +
          'or set KUBECTL to a kubectl binary.',
      );
    }
    throw new Error(`kubectl kustomize ${path.relative(ROOT, dir)} failed: ${err.stderr || err.message}`);
  }
  return parseAllDocuments(out)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((d): d is K8sObject => !!d);
}

type Validatable = { validate(): void };
type ModelClass = new (data: object) => Validatable;

const MODEL_PACKAGES: Record<string, string> = {
  v1: 'kubernetes-models/v1',
  'apps/v1': 'kubernetes-models/apps/v1',
  'batch/v1': 'kubernetes-models/batch/v1',
  'policy/v1': 'kubernetes-models/policy/v1',
  'autoscaling/v2': 'kubernetes-models/autoscaling/v2',
  'networking.k8s.io/v1': 'kubernetes-models/networking.k8s.io/v1',
  'monitoring.coreos.com/v1': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
  'postgresql.cnpg.io/v1': '@kubernetes-models/cloudnative-pg/postgresql.cnpg.io/v1',
};

function modelFor(apiVersion: string, kind: string): ModelClass {
  const name = MODEL_PACKAGES[apiVersion];
  if (!name) throw new Error(`no schema known for ${apiVersion}`);
  // The packages export ES modules under the `import` condition only; their files are loaded by path.
  const file = path.join(ROOT, 'node_modules', name, `${kind}.js`);
  if (!fs.existsSync(file)) throw new Error(`no model for ${apiVersion} ${kind}`);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(file) as Record<string, ModelClass>;
  const model = mod[kind] ?? (mod as unknown as { default: ModelClass }).default;
  if (!model) throw new Error(`no model for ${apiVersion} ${kind}`);
  return model;
}

function schemaProblem(doc: K8sObject): string | undefined {
  try {
    new (modelFor(doc.apiVersion, doc.kind))(doc).validate();
    return undefined;
  } catch (e) {
    return `${doc.kind}/${doc.metadata?.name}: ${(e as Error).message}`;
  }
}

function fileDocuments(file: string): K8sObject[] {
  return parseAllDocuments(fs.readFileSync(path.join(DEPLOY, file), 'utf8'), { merge: true })
    .map((d) => d.toJS() as K8sObject | null)
    .filter((d): d is K8sObject => !!d);
}

const selects = (selector: Labels | undefined, labels: Labels) => Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
const envOf = (c: Container, name: string) => c.env?.find((e) => e.name === name)?.value;
const podTemplates = (objects: K8sObject[]) =>
  objects.filter((o): o is Workload => o.kind === 'Deployment' || o.kind === 'Job').map((w) => ({ owner: `${w.kind}/${w.metadata.name}`, template: w.spec.template }));

describe('kubectl kustomize', () => {
  it('fails with a message naming the package when kubectl is missing', () => {
    expect(() => kustomize(path.join(DEPLOY, 'overlays/dev'), '/nonexistent/kubectl')).toThrow(/kubectl not found.*kubernetes-client.*KUBECTL/s);
  });
});

describe.each(Object.entries(OVERLAYS))('deploy/overlays/%s rendered by kubectl kustomize', (overlay, namespace) => {
  const objects = kustomize(path.join(DEPLOY, 'overlays', overlay));
  const ofKind = <T extends K8sObject>(kind: string) => objects.filter((o) => o.kind === kind) as T[];
  const deployments = ofKind<Workload>('Deployment');
  const api = deployments.find((d) => d.metadata.name === 'cluster-management-service')!;
  const worker = deployments.find((d) => d.metadata.name === 'cluster-management-service-worker')!;
  const job = ofKind<Workload>('Job').find((j) => j.metadata.name === 'cluster-management-service-migrate')!;

  it('renders the whole service', () => {
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    expect(kinds).toEqual(
      expect.arrayContaining([
        `Namespace/${namespace}`,
        'ServiceAccount/cluster-management-service',
        'Deployment/cluster-management-service',
        'Deployment/cluster-management-service-worker',
        'Job/cluster-management-service-migrate',
        'Service/cluster-management-service',
        'HorizontalPodAutoscaler/cluster-management-service',
        'PodDisruptionBudget/cluster-management-service',
        'PodDisruptionBudget/cluster-management-service-worker',
        'NetworkPolicy/cluster-management-service',
        'NetworkPolicy/cluster-management-service-api',
        'ServiceMonitor/cluster-management-service',
        'PodMonitor/cluster-management-service-worker',
        'PrometheusRule/cluster-management-service',
      ]),
    );
    expect(ofKind('Secret')).toEqual([]); // secrets are created out of band (deploy/examples/secret.example.yaml)
  });

  it('validates every object against the Kubernetes, Prometheus Operator and CloudNativePG schemas', () => {
    expect(objects.map(schemaProblem).filter(Boolean)).toEqual([]);
  });

  it(`puts every namespaced object in namespace ${namespace}`, () => {
    const missing = objects.filter((o) => !CLUSTER_SCOPED.has(o.kind) && o.metadata.namespace !== namespace).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(missing).toEqual([]);
    expect(objects.filter((o) => CLUSTER_SCOPED.has(o.kind)).map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([`Namespace/${namespace}`]);
    const ns = ofKind('Namespace')[0];
    expect(ns.metadata.labels).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted' });
  });

  it('sets no replicas on a Deployment that an HPA scales', () => {
    const hpas = ofKind<K8sObject & { spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number } }>(
      'HorizontalPodAutoscaler',
    );
    expect(hpas.length).toBeGreaterThan(0);
    for (const hpa of hpas) {
      const target = deployments.find((d) => hpa.spec.scaleTargetRef.kind === 'Deployment' && d.metadata.name === hpa.spec.scaleTargetRef.name);
      expect(target).toBeDefined();
      expect(target!.spec).not.toHaveProperty('replicas');
      expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
    }
    expect(api.spec).not.toHaveProperty('replicas');
    expect(worker.spec.replicas).toBeGreaterThanOrEqual(1); // no HPA: the count is the manifest's
  });

  it('has a PodDisruptionBudget for the API and one for the workers, each allowing a drain', () => {
    const pdbs = ofKind<K8sObject & { spec: { selector: { matchLabels: Labels }; maxUnavailable?: number; minAvailable?: number } }>('PodDisruptionBudget');
    for (const d of [api, worker]) {
      const covering = pdbs.filter((p) => selects(p.spec.selector.matchLabels, d.spec.template.metadata.labels));
      expect({ deployment: d.metadata.name, budgets: covering.length }).toEqual({ deployment: d.metadata.name, budgets: 1 });
      expect(covering[0].spec.maxUnavailable).toBe(1);
    }
  });

  it('runs every pod under a ServiceAccount that mounts no token', () => {
    const [sa] = ofKind<K8sObject & { automountServiceAccountToken?: boolean }>('ServiceAccount');
    expect(sa.automountServiceAccountToken).toBe(false);
    const pods = podTemplates(objects);
    expect(pods.map((p) => p.owner).sort()).toEqual(['Deployment/cluster-management-service', 'Deployment/cluster-management-service-worker', 'Job/cluster-management-service-migrate']);
    for (const { owner, template } of pods) {
      expect({ owner, serviceAccountName: template.spec.serviceAccountName, automount: template.spec.automountServiceAccountToken }).toEqual({
        owner,
        serviceAccountName: sa.metadata.name,
        automount: false,
      });
    }
  });

  it('puts every pod behind a NetworkPolicy: ingress from the ingress controller (API only) and Prometheus, egress to DNS, PostgreSQL and public HTTP(S)', () => {
    const policies = ofKind<NetworkPolicy>('NetworkPolicy');
    const INGRESS_CONTROLLER: NetworkPolicyPeer = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } };
    const PROMETHEUS: NetworkPolicyPeer = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
    };
    for (const { owner, template } of podTemplates(objects)) {
      const applying = policies.filter((p) => selects(p.spec.podSelector.matchLabels, template.metadata.labels));
      const types = new Set(applying.flatMap((p) => p.spec.policyTypes));
      expect({ owner, ingress: types.has('Ingress'), egress: types.has('Egress') }).toEqual({ owner, ingress: true, egress: true });
      const ingressPeers = applying.flatMap((p) => (p.spec.ingress ?? []).flatMap((r) => r.from ?? [{ anywhere: true } as NetworkPolicyPeer]));
      const expected = owner === 'Deployment/cluster-management-service' ? [PROMETHEUS, INGRESS_CONTROLLER] : [PROMETHEUS];
      expect({ owner, ingressPeers }).toEqual({ owner, ingressPeers: expect.arrayContaining(expected) });
      expect(ingressPeers).toHaveLength(expected.length);

      const egress = applying.flatMap((p) => p.spec.egress ?? []);
      const ports = (r: NetworkPolicyRule) => (r.ports ?? []).map((p) => `${p.protocol ?? 'TCP'}/${p.port}`);
      const dns = egress.find((r) => ports(r).includes('UDP/53'));
      expect(dns?.to?.[0]).toMatchObject({ podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } });
      expect(egress.some((r) => ports(r).includes('TCP/5432'))).toBe(true);
      const publicRule = egress.find((r) => ports(r).includes('TCP/443'));
      // Drivers and webhook receivers: public addresses only, as the service's outbound policy allows.
      expect(publicRule?.to).toEqual(
        expect.arrayContaining([
          { ipBlock: { cidr: '0.0.0.0/0', except: expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '127.0.0.0/8']) } },
          { ipBlock: { cidr: '::/0', except: expect.arrayContaining(['fc00::/7', 'fe80::/10']) } },
        ]),
      );
      // Nothing else: every egress rule names its ports.
      expect(egress.filter((r) => !r.ports?.length)).toEqual([]);
    }
  });

  it('runs the migrations as a Job of their own, before the pods, outside any probe', () => {
    const [container] = job.spec.template.spec.containers;
    expect(container.command).toEqual(MIGRATE_COMMAND);
    expect(container.image).toBe(api.spec.template.spec.containers[0].image);
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    expect(container.readinessProbe ?? container.livenessProbe ?? container.startupProbe).toBeUndefined();
    // Argo CD runs it before the sync's other objects; Flux recreates it (a Job's template is immutable).
    expect(job.metadata.annotations).toMatchObject({
      'argocd.argoproj.io/hook': 'PreSync',
      'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation',
      'kustomize.toolkit.fluxcd.io/force': 'enabled',
    });
    expect(job.metadata.labels).toMatchObject({ 'app.kubernetes.io/component': 'migration' });
    expect(job.spec.template.metadata.labels).toMatchObject({ 'app.kubernetes.io/component': 'migration' });
    // The same database settings as the pods.
    expect(container.envFrom).toEqual(api.spec.template.spec.containers[0].envFrom);
  });

  it("applies alone with the selector docs/operations.md gives (the Job and the settings it reads, nothing that starts pods)", () => {
    // kubectl apply -k OVERLAY -l 'app.kubernetes.io/component in (migration,settings)'
    const selected = objects.filter((o) => ['migration', 'settings'].includes(o.metadata.labels?.['app.kubernetes.io/component'] ?? ''));
    expect(selected.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Job']);
    const configMap = job.spec.template.spec.containers[0].envFrom!.find((e) => e.configMapRef)!.configMapRef!.name;
    expect(selected.find((o) => o.kind === 'ConfigMap')!.metadata.name).toBe(configMap);
  });

  it('pins the image, and gives every pod the settings ConfigMap the overlay generated', () => {
    const [settings] = ofKind<K8sObject & { data: Labels }>('ConfigMap');
    expect(settings.metadata.name).toMatch(/^cluster-management-service-settings-[a-z0-9]+$/);
    expect(settings.data).toMatchObject({ LOG_LEVEL: expect.any(String), PUBLIC_API_URL: expect.stringMatching(/^https:\/\//) });
    for (const { owner, template } of podTemplates(objects)) {
      for (const c of template.spec.containers) {
        expect({ owner, image: c.image }).toEqual({ owner, image: expect.stringMatching(/^[\w.-]+(\/[\w.-]+)+:[\w.-]+$/) });
        expect(c.envFrom).toEqual([{ secretRef: { name: 'cluster-management-service' } }, { configMapRef: { name: settings.metadata.name } }]);
      }
    }
  });

  it('runs Pod Security "restricted", and the API trusts one proxy hop', () => {
    for (const { owner, template } of podTemplates(objects)) {
      expect({ owner, pod: template.spec.securityContext }).toMatchObject({ owner, pod: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } } });
      for (const c of template.spec.containers) {
        expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      }
    }
    expect(envOf(api.spec.template.spec.containers[0], 'TRUST_PROXY')).toBe('1');
  });

  it('runs the API with the background loops off and a worker of the same image with them on', () => {
    const [a] = api.spec.template.spec.containers;
    const [w] = worker.spec.template.spec.containers;
    expect(envOf(a, 'BACKGROUND_JOBS_ENABLED')).toBe('false');
    expect(envOf(w, 'BACKGROUND_JOBS_ENABLED')).toBe('true');
    expect(w.image).toBe(a.image);
    expect(Number(envOf(w, 'BACKGROUND_DATABASE_POOL_SIZE'))).toBeGreaterThan(0);
    for (const d of [api, worker]) {
      const [c] = d.spec.template.spec.containers;
      expect(c.readinessProbe).toMatchObject({ httpGet: { path: '/health/ready' } });
      expect(c.livenessProbe).toMatchObject({ httpGet: { path: '/health' } });
      // Above the service's own shutdown bound (delay + grace + 5 s).
      const bound = (Number(envOf(c, 'SHUTDOWN_DELAY_MS') ?? 0) + Number(envOf(c, 'SHUTDOWN_GRACE_MS')) + 5000) / 1000;
      expect(d.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(bound);
    }
  });

  it('routes requests to the API only, and scrapes the API through its Service and the workers through a PodMonitor', () => {
    const services = ofKind<K8sObject & { spec: { selector: Labels } }>('Service');
    expect(services).toHaveLength(1);
    expect(selects(services[0].spec.selector, api.spec.template.metadata.labels)).toBe(true);
    expect(selects(services[0].spec.selector, worker.spec.template.metadata.labels)).toBe(false);
    const [serviceMonitor] = ofKind<K8sObject & { spec: { selector: { matchLabels: Labels } } }>('ServiceMonitor');
    expect(selects(serviceMonitor.spec.selector.matchLabels, services[0].metadata.labels ?? {})).toBe(true);
    const [podMonitor] = ofKind<K8sObject & { spec: { selector: { matchLabels: Labels } } }>('PodMonitor');
    expect(selects(podMonitor.spec.selector.matchLabels, worker.spec.template.metadata.labels)).toBe(true);
    expect(selects(podMonitor.spec.selector.matchLabels, api.spec.template.metadata.labels)).toBe(false);
  });
});

describe('deploy/overlays differ where environments do', () => {
  const dev = kustomize(path.join(DEPLOY, 'overlays/dev'));
  const production = kustomize(path.join(DEPLOY, 'overlays/production'));
  const find = (objects: K8sObject[], kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name) as K8sObject & { spec: Record<string, unknown> };

  it('scales production to 3-10 API replicas and 2 workers, dev to 1-2 and 1', () => {
    expect(find(production, 'HorizontalPodAutoscaler', 'cluster-management-service').spec).toMatchObject({ minReplicas: 3, maxReplicas: 10 });
    expect(find(dev, 'HorizontalPodAutoscaler', 'cluster-management-service').spec).toMatchObject({ minReplicas: 1, maxReplicas: 2 });
    expect(find(production, 'Deployment', 'cluster-management-service-worker').spec.replicas).toBe(2);
    expect(find(dev, 'Deployment', 'cluster-management-service-worker').spec.replicas).toBe(1);
  });

  it('narrows PostgreSQL egress in production to the database range', () => {
    const rule = (objects: K8sObject[]) =>
      (find(objects, 'NetworkPolicy', 'cluster-management-service') as NetworkPolicy).spec.egress!.find((r) => r.ports?.some((p) => p.port === 5432));
    expect(rule(dev)?.to).toBeUndefined(); // any address
    expect(rule(production)?.to).toEqual([{ ipBlock: { cidr: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+\/\d+$/) } }]);
  });
});

describe('deploy/examples', () => {
  it.each(['examples/secret.example.yaml', 'examples/postgres-cnpg.example.yaml'])('%s is valid against its JSON schema', (file) => {
    const docs = fileDocuments(file);
    expect(docs.length).toBeGreaterThan(0);
    expect(docs.map(schemaProblem).filter(Boolean)).toEqual([]);
  });

  it('names every key the pods read in the Secret example, with placeholders the service refuses to start with', () => {
    const [secret] = fileDocuments('examples/secret.example.yaml') as (K8sObject & { stringData: Labels })[];
    expect(secret.metadata.name).toBe('cluster-management-service');
    expect(Object.keys(secret.stringData).sort()).toEqual(['BOOTSTRAP_ADMIN_TOKEN', 'CREDENTIALS_ENCRYPTION_KEY', 'DATABASE_URL', 'METRICS_TOKEN']);
    // Applied as it is, the example stops the service at start-up with each secret named (the old all-zero key was
    // accepted).
    const env = { ...secret.stringData, NODE_ENV: 'production' };
    for (const name of ['CREDENTIALS_ENCRYPTION_KEY', 'BOOTSTRAP_ADMIN_TOKEN', 'METRICS_TOKEN']) {
      expect(() => loadConfig(env)).toThrow(new RegExp(name));
    }
    const usable = { DATABASE_URL: secret.stringData.DATABASE_URL, NODE_ENV: 'production', CREDENTIALS_ENCRYPTION_KEY: randomBytes(32).toString('hex'), BOOTSTRAP_ADMIN_TOKEN: randomBytes(16).toString('hex'), METRICS_TOKEN: randomBytes(16).toString('hex') };
    expect(() => loadConfig(usable)).not.toThrow();
  });

  it('refuses an invalid manifest (the check can fail)', () => {
    const deployment = kustomize(path.join(DEPLOY, 'overlays/dev')).find((o) => o.kind === 'Deployment')!;
    const broken = JSON.parse(JSON.stringify(deployment)) as Workload;
    broken.spec.replicas = 'three' as unknown as number;
    expect(schemaProblem(broken)).toMatch(/replicas/);
  });
});

describe('docker-compose.yaml', () => {
  it('has the same topology as the manifests (one image, API loops off, worker loops on, no worker port)', () => {
    // Compose files share settings through YAML merge keys (`<<:`).
    const compose = fileDocuments('docker-compose.yaml')[0] as unknown as {
      services: Record<string, { image?: string; ports?: string[]; environment: Record<string, string> }>;
    };
    const { api: a, worker: w } = compose.services;
    expect(a.environment.BACKGROUND_JOBS_ENABLED).toBe('false');
    expect(w.environment.BACKGROUND_JOBS_ENABLED).toBe('true');
    expect(a.image).toBe('cluster-management-service:local');
    expect(w.image).toBe(a.image);
    expect(w.ports).toBeUndefined();
    expect(a.environment.DATABASE_URL).toMatch(/^postgres:\/\/.+@postgres:5432\//);
    expect(w.environment.DATABASE_URL).toBe(a.environment.DATABASE_URL);
  });
});

describe('Dockerfile', () => {
  const dockerfile = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const runtime = stages[stages.length - 1];

  it('builds on Node.js 24 in every stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage).toMatch(/^node:24[-.\w]*\s/);
  });

  it('runs as a non-root user, without dev dependencies, with a liveness HEALTHCHECK', () => {
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/npm ci --omit=dev/);
    expect(runtime).not.toMatch(/npm (ci|install)(?![^\n]*--omit=dev)/);
    expect(runtime).toMatch(/HEALTHCHECK[\s\S]*\/health'/);
    expect(runtime).toMatch(/NODE_ENV=production/);
  });

  it('starts the service with the same Node.js flags as npm start (package.json config.nodeFlags)', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    const flags: string[] = pkg.config.nodeFlags.split(/\s+/).filter(Boolean);
    expect(pkg.scripts.start).toBe('node $npm_package_config_nodeFlags dist/src/main.js');
    expect(runtime).toContain(`CMD ${JSON.stringify(['node', ...flags, 'dist/src/main.js'])}`.replace(/","/g, '", "'));
  });

  it('builds the migration command the Job runs (dist/scripts/migrate.js from scripts/migrate.ts)', () => {
    expect(fs.existsSync(path.join(ROOT, 'scripts/migrate.ts'))).toBe(true);
    const build = JSON.parse(fs.readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[]; exclude?: string[] };
    expect(build.include).toContain('scripts');
    expect(build.exclude ?? []).not.toContain('scripts/migrate.ts');
    expect(runtime).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    expect(MIGRATE_COMMAND[1]).toBe('dist/scripts/migrate.js');
  });
});
