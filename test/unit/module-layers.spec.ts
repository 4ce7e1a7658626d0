import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { regionOf } from '../../scripts/docs/marked-region';
import { ARCHITECTURE_DOC, CRUISER_CONFIG, declaredLayers, LAYERS_REGION, renderLayerDiagram } from '../../scripts/docs/module-layers';

/**
 * The module layers (docs/architecture.md, "Module layers"; .dependency-cruiser.cjs declares them): dependency-cruiser
 * runs its rules over src/ (type-only imports count), and over a scratch copy of src/ with violating imports added,
 * to show that each rule fails naming itself. On top of the rules, the test finds cycles between modules and folders
 * of src/ that no layer declares.
 */

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');

interface CruiseResult {
  summary: { violations: { rule: { name: string }; from: string; to: string }[] };
  modules: { source: string; dependencies: { resolved: string }[] }[];
}

/** Runs the dependency-cruiser CLI with the project's configuration over `src/` of `root`. */
function cruise(root: string): CruiseResult {
  const run = spawnSync(process.execPath, [CLI, 'src', '--config', CRUISER_CONFIG, '--output-type', 'json'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (!run.stdout) throw new Error(`dependency-cruiser did not answer: ${run.stderr}`);
  return JSON.parse(run.stdout) as CruiseResult;
}

/** A file's module: its folder under src/, or `app` for the files directly in src/. */
const moduleOf = (file: string): string => {
  const parts = file.split('/');
  return parts.length === 2 ? 'app' : parts[1];
};

/**
 * Every cycle between modules: each group of modules that reach one another (a strongly connected component of the
 * module graph), as `module-cycle: a -> b -> a` for two modules, else naming the members.
 */
function moduleCycles(result: CruiseResult): string[] {
  const edges = new Map<string, Set<string>>();
  for (const m of result.modules) {
    if (!m.source.startsWith('src/')) continue;
    for (const d of m.dependencies) {
      if (!d.resolved.startsWith('src/') || moduleOf(d.resolved) === moduleOf(m.source)) continue;
      const from = edges.get(moduleOf(m.source)) ?? new Set<string>();
      edges.set(moduleOf(m.source), from.add(moduleOf(d.resolved)));
    }
  }
  // Tarjan's algorithm.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of [...(edges.get(v) ?? [])].sort()) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do component.push((w = stack.pop()!));
      while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);
  return components.map((c) => (c.length === 2 ? `module-cycle: ${c[0]} -> ${c[1]} -> ${c[0]}` : `module-cycle: ${c.join(', ')} reach one another`));
}

/** Folders of src/ that no layer declares. */
function undeclaredModules(root: string): string[] {
  const declared = new Set(declaredLayers().flatMap((l) => l.modules.map((m) => m.name)));
  return fs
    .readdirSync(path.join(root, 'src'), { withFileTypes: true })
    .filter((e) => e.isDirectory() && !declared.has(e.name))
    .map((e) => `undeclared-module: src/${e.name} belongs to no layer (declare it in .dependency-cruiser.cjs)`);
}

/** Every breach: the cruiser's violations (`rule: from → to`), cycles between modules, undeclared folders. */
function breaches(root: string, result = cruise(root)): string[] {
  return [...result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`), ...moduleCycles(result), ...undeclaredModules(root)];
}

describe('module layers', () => {
  it('hold in src/: no import against the layer order or the declared direction, no deep import, no cycle, no undeclared module', () => {
    const result = cruise(ROOT);
    expect(result.modules.filter((m) => m.source.startsWith('src/')).length).toBeGreaterThan(300);
    expect(breaches(ROOT, result)).toEqual([]);
  });

  it('are declared consistently: each module once, and within a layer each uses only modules declared before it', () => {
    const seen = new Set<string>();
    const problems: string[] = [];
    for (const layer of declaredLayers()) {
      const before = new Set<string>();
      for (const m of layer.modules) {
        if (seen.has(m.name)) problems.push(`${m.name} is declared twice`);
        for (const used of m.uses) if (!before.has(used)) problems.push(`${layer.name}: ${m.name} uses ${used}, which is not declared before it in the layer`);
        seen.add(m.name);
        before.add(m.name);
      }
    }
    expect(problems).toEqual([]);
    expect([...seen]).toEqual(expect.arrayContaining(['common', 'config', 'database', 'identity', 'auth', 'audit', 'clusters', 'provisioning', 'metering', 'app']));
  });

  it('are drawn in docs/architecture.md as declared (run npm run docs:layers when this fails)', () => {
    const committed = regionOf(fs.readFileSync(ARCHITECTURE_DOC, 'utf8'), LAYERS_REGION).trim();
    expect({ diagram: committed, fix: 'run npm run docs:layers' }).toEqual({ diagram: renderLayerDiagram(), fix: 'run npm run docs:layers' });
  });

  describe('fail on a scratch copy of src/ with violating imports, naming the rule', () => {
    let scratch: string;
    let found: string[];
    /** A fresh copy of src/ (and the tsconfig the cruiser resolves with) with `files` added, in a scratch directory. */
    const scratchCopy = (files: Record<string, string>): string => {
      const root = fs.mkdtempSync(path.join(os.tmpdir(), 'module-layers-'));
      fs.cpSync(path.join(ROOT, 'src'), path.join(root, 'src'), { recursive: true });
      fs.copyFileSync(path.join(ROOT, 'tsconfig.json'), path.join(root, 'tsconfig.json'));
      for (const [file, text] of Object.entries(files)) {
        fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
        fs.writeFileSync(path.join(root, file), text);
      }
      return root;
    };
    const probes: Record<string, string> = {
      // The ground imports a domain module.
      'src/common/layer-probe.ts': "import { CLUSTER_STATUSES } from '../clusters/cluster.entity';\nexport const probe = CLUSTER_STATUSES;\n",
      // A type-only import against the layer order counts too.
      'src/audit/type-probe.ts': "import type { ClusterEntity } from '../clusters/cluster.entity';\nexport type Probe = ClusterEntity;\n",
      // The scheduler may use upgrades, but not a file upgrades does not expose.
      'src/scheduler/deep-probe.ts': "import { UpgradeMetrics } from '../upgrades/upgrade-metrics';\nexport const probe = UpgradeMetrics;\n",
      // A new domain module declared in advance (metering) is covered; an undeclared folder is refused.
      'src/metering/usage-probe.ts': "import { ClustersQueryService } from '../clusters/clusters-query.service';\nexport const probe = ClustersQueryService;\n",
      'src/billing/invoice-probe.ts': "import { Clock } from '../common/clock';\nexport const probe = Clock;\n",
    };

    beforeAll(() => {
      scratch = scratchCopy(probes);
      found = breaches(scratch);
    });

    afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

    it('an upward import (common importing clusters) fails layer-order, type-only or not', () => {
      expect(found).toContain('layer-order: src/common/layer-probe.ts → src/clusters/cluster.entity.ts');
      expect(found).toContain('layer-order: src/audit/type-probe.ts → src/clusters/cluster.entity.ts');
    });

    it('a cycle between two domain modules (clusters importing policies, which imports clusters) fails module-direction and is named as a cycle', () => {
      const root = scratchCopy({
        'src/clusters/cycle-probe.ts': "import { ClusterPoliciesService } from '../policies/cluster-policies.service';\nexport const probe = ClusterPoliciesService;\n",
      });
      try {
        expect(breaches(root)).toEqual([
          'module-direction: src/clusters/cycle-probe.ts → src/policies/cluster-policies.service.ts',
          'module-cycle: clusters -> policies -> clusters',
        ]);
      } finally {
        fs.rmSync(root, { recursive: true, force: true });
      }
    });

    it('a deep import into another module fails no-deep-import', () => {
      expect(found).toContain('no-deep-import: src/scheduler/deep-probe.ts → src/upgrades/upgrade-metrics.ts');
    });

    it('a folder no layer declares fails; metering, declared in advance, may use clusters', () => {
      expect(found).toContain('undeclared-module: src/billing belongs to no layer (declare it in .dependency-cruiser.cjs)');
      expect(found.filter((f) => f.includes('usage-probe'))).toEqual([]);
    });

    it('finds nothing else (an upward import also closes a cycle between the two modules)', () => {
      expect(found.filter((f) => !f.startsWith('module-cycle:'))).toHaveLength(4);
      expect(found.filter((f) => f.startsWith('module-cycle:'))).toHaveLength(1);
    });
  });
});
