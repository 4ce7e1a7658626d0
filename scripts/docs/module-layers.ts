import * as fs from 'fs';
import * as path from 'path';
import { type Region, withRegion } from './marked-region';

/** One module of the declaration in .dependency-cruiser.cjs. */
export interface LayerModule {
  name: string;
  /** The modules of its own layer it may import (each declared before it). */
  uses: string[];
  /** Files other modules may import besides those public by name; 'all' for a library. */
  exposes: string[] | 'all';
}
export interface Layer {
  name: string;
  why: string;
  modules: LayerModule[];
}

export const CRUISER_CONFIG = path.resolve(__dirname, '../../.dependency-cruiser.cjs');
export const ARCHITECTURE_DOC = path.resolve(__dirname, '../../docs/architecture.md');
export const LAYERS_REGION: Region = { name: 'module-layers', command: 'npm run docs:layers' };

/** The layers as .dependency-cruiser.cjs declares them, lowest first. */
export function declaredLayers(): Layer[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require(CRUISER_CONFIG) as { layers: Layer[] }).layers;
}

const nodeId = (module: string) => module.replace(/[^A-Za-z0-9]/g, '_');

/**
 * The Mermaid flowchart of docs/architecture.md ("Module layers"): the highest layer on top, one box per layer, an
 * arrow from each layer to the one below (its modules may import any module there), and within a layer an arrow per
 * declared `uses` (the only direction imports may take inside it).
 */
export function renderLayerDiagram(layers: Layer[] = declaredLayers()): string {
  const lines = ['```mermaid', 'flowchart TB'];
  const top = [...layers].reverse();
  top.forEach((layer) => {
    const id = `layer_${nodeId(layer.name)}`;
    lines.push(`  subgraph ${id}["${layer.name}"]`, '    direction TB');
    for (const m of layer.modules) lines.push(`    ${nodeId(m.name)}["${m.name === 'app' ? 'app (src/*.ts)' : m.name}"]`);
    for (const m of layer.modules) for (const used of m.uses) lines.push(`    ${nodeId(m.name)} --> ${nodeId(used)}`);
    lines.push('  end');
  });
  for (let i = 0; i + 1 < top.length; i++) lines.push(`  layer_${nodeId(top[i].name)} ==> layer_${nodeId(top[i + 1].name)}`);
  lines.push('```');
  const legend = top.map((l) => `- **${l.name}**: ${l.modules.map((m) => `\`${m.name}\``).join(', ')}: ${l.why}.`);
  return [...lines, '', ...legend].join('\n');
}

if (require.main === module) {
  fs.writeFileSync(ARCHITECTURE_DOC, withRegion(fs.readFileSync(ARCHITECTURE_DOC, 'utf8'), LAYERS_REGION, renderLayerDiagram()));
  process.stdout.write(`wrote the module layer diagram (${declaredLayers().flatMap((l) => l.modules).length} modules) into docs/architecture.md\n`);
}
