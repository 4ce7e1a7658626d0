import * as fs from 'fs';
import * as path from 'path';
import { OPERATION_DESCRIPTIONS } from '../../src/common/operation-descriptions';

/**
 * Every operation of the API document has a description, and operation-descriptions.ts holds no stale entry:
 * each key names an operation of the document that takes its description from the map (an operation described
 * in the code keeps its own text, so an entry for it would be dead). The document checked is docs/openapi.json,
 * which openapi.e2e-spec.ts keeps equal to the running service's.
 */
type Operation = { operationId?: string; summary?: string; description?: string };

const doc = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
};
const operations = Object.entries(doc.paths).flatMap(([p, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ id: `${method.toUpperCase()} ${p}`, op })),
);

describe('operation descriptions', () => {
  it('gives every operation a description that says more than its summary', () => {
    const missing = operations.filter(({ op }) => !op.description?.trim() || op.description.trim() === op.summary?.trim()).map(({ id }) => id);
    expect(missing).toEqual([]);
  });

  it('has no stale entries: every key names an operation that uses it', () => {
    const byId = new Map(operations.map(({ op }) => [op.operationId, op]));
    const stale = Object.entries(OPERATION_DESCRIPTIONS)
      .filter(([id, text]) => byId.get(id)?.description !== text)
      .map(([id]) => (byId.has(id) ? `${id}: described in the code, the entry is not used` : `${id}: no such operationId`));
    expect(stale).toEqual([]);
  });
});
