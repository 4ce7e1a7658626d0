import * as fs from 'fs';
import * as path from 'path';
import { Document, Spectral } from '@stoplight/spectral-core';
import * as Parsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';

/**
 * Lints the committed OpenAPI document (docs/openapi.json, kept equal to the running service's by
 * openapi.e2e-spec.ts) with Spectral's OpenAPI ruleset. One rule is off, for a stated reason:
 * - `path-params`: the interface fixes both DELETE /api/v1/organisations/{organisationIdentity} and
 *   GET|PATCH /api/v1/organisations/{organisationSlug}; the service tells them apart by the value (a UUID).
 */
describe('OpenAPI document lint (Spectral, spectral:oas)', () => {
  it('has no findings', async () => {
    const spectral = new Spectral();
    spectral.setRuleset({
      extends: [[oas as never, 'recommended']],
      rules: { 'path-params': 'off' },
    } as never);
    const text = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'openapi.json'), 'utf8');
    const results = await spectral.run(new Document(text, Parsers.Json, 'openapi.json'));
    const findings = results.map((r) => `${r.code} ${r.path.join('.')}: ${r.message}`);
    expect(findings).toEqual([]);
  }, 60_000);
});
