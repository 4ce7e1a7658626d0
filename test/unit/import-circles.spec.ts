import * as path from 'path';
import { parseCircular, parseDependencyTree } from 'dpdm';

/**
 * No import circle in src/ (type-only imports count: a circle of types is a circle of ideas). dpdm parses the
 * TypeScript sources with the compiler and lists every cycle of the import graph.
 */
describe('imports in src/', () => {
  it('form no circle', async () => {
    const root = path.resolve(__dirname, '../..');
    const tree = await parseDependencyTree('src/**/*.ts', { cwd: root, context: root, transform: false, skipDynamicImports: false });
    expect(Object.keys(tree).length).toBeGreaterThan(100);
    const circles = parseCircular(tree).map((cycle) => cycle.join(' -> '));
    expect(circles).toEqual([]);
  });
});
