import * as fs from 'fs';
import { Document, Spectral } from '@stoplight/spectral-core';
import * as Parsers from '@stoplight/spectral-parsers';
import { DOCUMENT_FILE, loadRuleset, readRulesetDefinition, syncResponseOverrides } from './spectral-ruleset';

/**
 * Lints the committed OpenAPI document (docs/openapi.json, kept equal to the running service's by
 * openapi.e2e-spec.ts) with the project's Spectral ruleset, .spectral.yaml: Spectral's OpenAPI rules
 * (recommended) and the OWASP API Security Top 10 2023 rules, with the rules that do not fit switched off
 * there, each with its reason. No finding of severity error is allowed; warnings only of the rules that
 * .spectral.yaml explicitly keeps as "warn" (accepted, with the reason written there).
 */
describe('OpenAPI document lint (Spectral: .spectral.yaml, spectral:oas + OWASP)', () => {
  const text = fs.readFileSync(DOCUMENT_FILE, 'utf8');

  it('has the generated response overrides of this document (run `npm run openapi:generate` after an API change)', () => {
    const [current, expected] = syncResponseOverrides(JSON.parse(text), false);
    expect(current).toEqual(expected);
  });

  it('has no errors, and warnings only of rules the ruleset keeps as warnings', async () => {
    const spectral = new Spectral();
    spectral.setRuleset(loadRuleset());
    const results = await spectral.run(new Document(text, Parsers.Json, DOCUMENT_FILE));
    const describe = (r: (typeof results)[number]) => `${r.code} ${r.path.join('.')}: ${r.message}`;
    expect(results.filter((r) => r.severity === 0).map(describe)).toEqual([]);
    const accepted = new Set(
      Object.entries(readRulesetDefinition().rules)
        .filter(([, severity]) => severity === 'warn')
        .map(([rule]) => rule),
    );
    expect(results.filter((r) => r.severity === 1 && !accepted.has(String(r.code))).map(describe)).toEqual([]);
  }, 120_000);
});
