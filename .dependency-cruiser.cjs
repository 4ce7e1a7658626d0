/**
 * The module layers of src/, declared once (docs/architecture.md, "Module layers"; docs/adr/0110). Every folder of
 * src/ is a module; the files directly in src/ are the app. A module may import
 *   - any module of a lower layer (never one of a higher layer: rule `layer-order`);
 *   - within its own layer, only the modules listed in its `uses` (rule `module-direction`): each lists only
 *     modules declared before it, so imports within a layer go one way and no cycle between modules can form;
 *   - of another module, only its public surface (rule `no-deep-import`): `*.module.ts`, `*.service.ts`,
 *     `*.entity.ts`, `index.ts`, the files under `dto/`, and the files the module lists in `exposes` (its ports,
 *     and the helpers it shares); a module with `exposes: 'all'` is a library (the ground, the identity records).
 * Type-only imports count (they couple the modules as much). `npm test` runs these rules over src/
 * (test/unit/module-layers.spec.ts), and the diagram in docs/architecture.md is generated from them
 * (npm run docs:layers).
 */
/** What every module exposes by its files' names (paths within the module). */
const PUBLIC_BY_NAME = ['.*\\.module\\.ts$', '.*\\.service\\.ts$', '.*\\.entity\\.ts$', 'index\\.ts$', 'dto/', '.*/dto/'];

const LAYERS = [
  {
    name: 'ground',
    why: 'libraries and the shared mechanisms every module uses (errors, paging, clock, secrets, settings, database)',
    modules: [
      { name: 'config', uses: [], exposes: 'all' },
      { name: 'common', uses: ['config'], exposes: 'all' },
      { name: 'database', uses: ['config', 'common'], exposes: 'all' },
    ],
  },
  {
    name: 'identity and audit',
    why: 'who is calling and what they may do, what they did, and the cross-cutting mechanisms (metrics, jobs, executor)',
    modules: [
      { name: 'identity', uses: [], exposes: 'all' },
      { name: 'executor', uses: [], exposes: ['executor.ts', 'executor-docs.ts', 'worker-handler.ts'] },
      { name: 'metrics', uses: ['executor'], exposes: [] },
      { name: 'jobs', uses: ['metrics'], exposes: ['background-job.ts', 'job-loop.ts', 'notify-listener.ts'] },
      { name: 'health', uses: [], exposes: ['service-state.ts', 'startup-gate.ts'] },
      { name: 'activity', uses: ['identity'], exposes: [] },
      { name: 'audit', uses: ['identity', 'activity'], exposes: ['audit-diff.ts', 'audit-event-sink.ts', 'audit-event-types.ts', 'audit-recorder.ts', 'audited-transaction.ts', 'audit.interceptor.ts'] },
      { name: 'idempotency', uses: ['identity', 'audit'], exposes: ['idempotency.interceptor.ts', 'idempotency-key.ts'] },
      { name: 'retention', uses: ['metrics', 'jobs'], exposes: [] },
      { name: 'users', uses: ['identity', 'audit'], exposes: [] },
      { name: 'tokens', uses: ['identity', 'audit', 'users'], exposes: [] },
      { name: 'auth', uses: ['identity', 'metrics', 'jobs', 'audit', 'users', 'tokens'], exposes: ['request-rate-limits.ts'] },
    ],
  },
  {
    name: 'domain',
    why: "the service's business: organisations and what they own, clusters and everything that acts on them",
    modules: [
      { name: 'organisations', uses: [], exposes: ['organisation-events.ts'] },
      { name: 'catalog', uses: [], exposes: ['environment-types.ts', 'cloud-provider.entity.ts'] },
      { name: 'cluster-drivers', uses: ['catalog'], exposes: ['driver-contract.ts', 'driver-call-error.ts', 'cluster-driver-resolver.ts'] },
      { name: 'environments', uses: ['organisations', 'catalog'], exposes: [] },
      { name: 'cloud-accounts', uses: ['organisations', 'catalog'], exposes: [] },
      { name: 'maintenance', uses: ['organisations'], exposes: ['maintenance-exclusion.ts', 'maintenance-window.ts'] },
      { name: 'webhooks', uses: ['organisations'], exposes: ['webhook-outbox.ts'] },
      {
        name: 'clusters',
        uses: ['organisations', 'catalog', 'environments', 'cloud-accounts', 'maintenance'],
        exposes: ['addon-names.ts', 'cluster-change-gate.ts', 'cluster-conditions.ts', 'cluster-read.ts', 'cluster-view.ts', 'cluster-state-machine.ts', 'byon/byon-rules.ts', 'use-cases/'],
      },
      { name: 'provisioning', uses: ['organisations', 'catalog', 'cluster-drivers', 'environments', 'cloud-accounts', 'clusters'], exposes: [] },
      { name: 'policies', uses: ['organisations', 'catalog', 'environments', 'clusters'], exposes: ['cluster-policy-enforcer.ts', 'policy-examples.ts', 'policy-tasks.ts'] },
      { name: 'upgrades', uses: ['organisations', 'catalog', 'maintenance', 'clusters', 'policies'], exposes: ['upgrade-rows.ts'] },
      { name: 'scheduler', uses: ['organisations', 'maintenance', 'clusters', 'policies', 'upgrades'], exposes: [] },
      { name: 'observability', uses: ['organisations', 'environments', 'webhooks'], exposes: ['observability-tasks.ts'] },
      { name: 'metering', uses: ['organisations', 'catalog', 'cluster-drivers', 'environments', 'cloud-accounts', 'clusters', 'provisioning'], exposes: [] },
    ],
  },
  {
    name: 'edge',
    why: 'what composes the modules: the app (src/*.ts), the worker threads, the administrators\' API, the demo, compatibility',
    modules: [
      { name: 'admin', uses: [], exposes: [] },
      { name: 'compat', uses: [], exposes: ['compat.ts'] },
      { name: 'demo', uses: [], exposes: ['demo-identities.ts'] },
      { name: 'worker', uses: [], exposes: ['executor-worker.ts'] },
      { name: 'app', uses: ['admin', 'compat', 'demo', 'worker'], exposes: 'all' },
    ],
  },
];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\//g, '\\/');
/** The files of a module: a folder of src/, or for the app the files directly in src/. */
const pathOf = (module) => (module === 'app' ? '^src/[^/]+\\.ts$' : `^src/${escape(module)}/`);
const anyOf = (modules) => modules.map(pathOf);

const forbidden = [];
LAYERS.forEach((layer, i) => {
  const higher = LAYERS.slice(i + 1).flatMap((l) => l.modules.map((m) => m.name));
  if (higher.length) {
    forbidden.push({
      name: 'layer-order',
      comment: `The ${layer.name} layer imports no module of a higher layer (${higher.join(', ')}): invert the dependency with a port the lower module declares.`,
      severity: 'error',
      from: { path: anyOf(layer.modules.map((m) => m.name)) },
      to: { path: anyOf(higher) },
    });
  }
  for (const module of layer.modules) {
    const others = layer.modules.map((m) => m.name).filter((n) => n !== module.name && !module.uses.includes(n));
    if (others.length) {
      forbidden.push({
        name: 'module-direction',
        comment: `Within the ${layer.name} layer, ${module.name} uses only ${module.uses.join(', ') || 'nothing'}: ${others.join(', ')} would run against the declared direction (or close a cycle).`,
        severity: 'error',
        from: { path: pathOf(module.name) },
        to: { path: anyOf(others) },
      });
    }
    if (module.exposes !== 'all') {
      const exposed = module.exposes.map((f) => `^src/${escape(module.name)}/${escape(f)}${f.endsWith('/') ? '' : '$'}`);
      forbidden.push({
        name: 'no-deep-import',
        comment: `Another module imports only the public surface of ${module.name}: its *.module.ts, *.service.ts, *.entity.ts, index.ts and dto/${module.exposes.length ? `, and ${module.exposes.join(', ')}` : ''}.`,
        severity: 'error',
        from: { pathNot: pathOf(module.name) },
        to: { path: pathOf(module.name), pathNot: [...PUBLIC_BY_NAME.map((p) => `^src/${escape(module.name)}/${p}`), ...exposed] },
      });
    }
  }
});
forbidden.push({
  name: 'no-circular',
  comment: 'No import circle between files (type-only imports count); test/unit/import-circles.spec.ts holds the same rule with dpdm.',
  severity: 'error',
  from: { path: '^src/' },
  to: { circular: true },
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['cjs', 'es6'],
  },
};
/** The declaration itself, for the diagram (scripts/docs/module-layers.ts) and the test; not read by dependency-cruiser. */
Object.defineProperty(module.exports, 'layers', { value: LAYERS, enumerable: false });
