import * as fs from 'fs';
import * as path from 'path';
import { parseAllDocuments } from 'yaml';

/**
 * The shipped Kubernetes manifests are valid against the Kubernetes and operator JSON schemas (the
 * `kubernetes-models` packages carry them; no cluster is needed), follow Pod Security "restricted", and use the
 * narrow TRUST_PROXY form.
 */
const DEPLOY = path.resolve(__dirname, '../../deploy');

type Validatable = { validate(): void };
type ModelClass = new (data: object) => Validatable;

async function modelFor(apiVersion: string, kind: string): Promise<ModelClass> {
  const modules: Record<string, string> = {
    v1: 'kubernetes-models/v1',
    'apps/v1': 'kubernetes-models/apps/v1',
    'policy/v1': 'kubernetes-models/policy/v1',
    'autoscaling/v2': 'kubernetes-models/autoscaling/v2',
    'batch/v1': 'kubernetes-models/batch/v1',
    'monitoring.coreos.com/v1': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
    'postgresql.cnpg.io/v1': '@kubernetes-models/cloudnative-pg/postgresql.cnpg.io/v1',
  };
  const name = modules[apiVersion];
  if (!name) throw new Error(`no schema known for ${apiVersion}`);
  // The packages export ES modules under the `import` condition only; their files are loaded by path.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(path.resolve(__dirname, '../../node_modules', name, `${kind}.js`)) as Record<string, ModelClass>;
  const model = mod[kind] ?? (mod as unknown as { default: ModelClass }).default;
  if (!model) throw new Error(`no model for ${apiVersion} ${kind}`);
  return model;
}

function documents(file: string): Record<string, unknown>[] {
  return parseAllDocuments(fs.readFileSync(path.join(DEPLOY, file), 'utf8')).map((d) => d.toJS() as Record<string, unknown>);
}

describe('deployment manifests (deploy/)', () => {
  const kustomization = documents('kustomization.yaml')[0] as { resources: string[] };
  const files = [...kustomization.resources, 'secret.example.yaml', 'postgres-cnpg.example.yaml'];

  it.each(files)('%s is valid against its JSON schema', async (file) => {
    for (const doc of documents(file)) {
      const Model = await modelFor(String(doc.apiVersion), String(doc.kind));
      expect(() => new Model(doc).validate()).not.toThrow();
    }
  });

  it('refuses an invalid manifest (the check can fail)', async () => {
    const [deployment] = documents('deployment.yaml');
    const Model = await modelFor('apps/v1', 'Deployment');
    const broken = JSON.parse(JSON.stringify(deployment));
    broken.spec.replicas = 'three';
    expect(() => new Model(broken).validate()).toThrow();
  });

  it('has no migration Job, runs Pod Security restricted, and trusts one proxy hop', () => {
    expect(kustomization.resources.some((r) => documents(r).some((d) => d.kind === 'Job'))).toBe(false);
    const [deployment] = documents('deployment.yaml') as {
      spec: { template: { spec: { securityContext: Record<string, unknown>; containers: { env: { name: string; value: string }[]; securityContext: Record<string, unknown> }[] } } };
    }[];
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    for (const c of pod.containers) {
      expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(c.env.find((e) => e.name === 'TRUST_PROXY')?.value).toBe('1');
    }
  });
});

describe('API and worker topology (deploy/)', () => {
  type Container = { image: string; env: { name: string; value: string }[]; readinessProbe?: unknown; livenessProbe?: unknown };
  type Workload = { kind: string; metadata: { name: string }; spec: { replicas: number; template: { metadata: { labels: Record<string, string> }; spec: { terminationGracePeriodSeconds: number; containers: Container[] } } } };
  const kustomization = documents('kustomization.yaml')[0] as { resources: string[] };
  const all = kustomization.resources.flatMap((r) => documents(r));
  const deployments = all.filter((d) => d.kind === 'Deployment') as unknown as Workload[];
  const env = (w: Workload, name: string) => w.spec.template.spec.containers[0].env.find((e) => e.name === name)?.value;
  const api = deployments.find((d) => d.metadata.name === 'cluster-management-service')!;
  const worker = deployments.find((d) => d.metadata.name === 'cluster-management-service-worker')!;

  it('runs the API with the background loops off and a worker of the same image with them on', () => {
    expect(deployments).toHaveLength(2);
    expect(env(api, 'BACKGROUND_JOBS_ENABLED')).toBe('false');
    expect(env(worker, 'BACKGROUND_JOBS_ENABLED')).toBe('true');
    expect(worker.spec.template.spec.containers[0].image).toBe(api.spec.template.spec.containers[0].image);
    expect(Number(env(worker, 'BACKGROUND_DATABASE_POOL_SIZE'))).toBeGreaterThan(0);
    for (const w of [api, worker]) {
      expect(w.spec.template.spec.containers[0].readinessProbe).toMatchObject({ httpGet: { path: '/health/ready' } });
      expect(w.spec.template.spec.containers[0].livenessProbe).toMatchObject({ httpGet: { path: '/health' } });
      // Above the service's own shutdown bound (delay + grace + 5 s).
      const bound = (Number(env(w, 'SHUTDOWN_DELAY_MS') ?? 0) + Number(env(w, 'SHUTDOWN_GRACE_MS')) + 5000) / 1000;
      expect(w.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(bound);
    }
  });

  it('routes requests to the API only: the Service selects the API pods, not the workers', () => {
    const services = all.filter((d) => d.kind === 'Service') as { spec: { selector: Record<string, string> } }[];
    expect(services).toHaveLength(1);
    const selects = (labels: Record<string, string>) => Object.entries(services[0].spec.selector).every(([k, v]) => labels[k] === v);
    expect(selects(api.spec.template.metadata.labels)).toBe(true);
    expect(selects(worker.spec.template.metadata.labels)).toBe(false);
  });

  it('has the same topology in docker-compose.yaml (one image, API loops off, worker loops on, no worker port)', () => {
    // Compose files share settings through YAML merge keys (`<<:`).
    const compose = parseAllDocuments(fs.readFileSync(path.join(DEPLOY, 'docker-compose.yaml'), 'utf8'), { merge: true })[0].toJS() as {
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
  const dockerfile = fs.readFileSync(path.resolve(__dirname, '../../Dockerfile'), 'utf8');
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
    const pkg = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8'));
    const flags: string[] = pkg.config.nodeFlags.split(/\s+/).filter(Boolean);
    expect(pkg.scripts.start).toBe('node $npm_package_config_nodeFlags dist/src/main.js');
    expect(runtime).toContain(`CMD ${JSON.stringify(['node', ...flags, 'dist/src/main.js'])}`.replace(/","/g, '", "'));
  });
});
