import * as fs from 'fs';
import * as path from 'path';
import { pathToPointer } from '@stoplight/json';
import { Ruleset } from '@stoplight/spectral-core';
import owasp from '@stoplight/spectral-owasp-ruleset';
import { oas } from '@stoplight/spectral-rulesets';
import YAML from 'yaml';
import type { OpenAPIObject } from '@nestjs/swagger';
import { responseOnlySchemaNames } from '../../src/common/openapi-polish';

/**
 * The project's Spectral ruleset is the committed file .spectral.yaml (also read by the Spectral CLI). The lint
 * test loads it from there: `extends` names the two rulesets, which are mapped to the installed packages, and
 * `rules` and `overrides` are used as written. The overrides for answers are generated from the document
 * (responseOverridesBlock) and rewritten by `npm run openapi:generate`.
 */
export const RULESET_FILE = path.resolve(__dirname, '../../.spectral.yaml');
export const DOCUMENT_FILE = path.resolve(__dirname, '../../docs/openapi.json');

const EXTENDS: Record<string, unknown> = { 'spectral:oas': oas, '@stoplight/spectral-owasp-ruleset': owasp };
const BEGIN = '  # BEGIN generated response overrides\n';
const END = '  # END generated response overrides';

/** Rules that guard what clients send; off for what the service answers (the reason is in .spectral.yaml). */
export const REQUEST_ONLY_RULES = [
  'owasp:api4:2023-string-limit',
  'owasp:api4:2023-array-limit',
  'owasp:api4:2023-string-restricted',
  'owasp:api3:2023-constrained-additionalProperties',
];

export type RulesetDefinition = { extends: unknown[]; rules: Record<string, unknown>; overrides?: unknown[] };

export function readRulesetDefinition(): RulesetDefinition {
  return YAML.parse(fs.readFileSync(RULESET_FILE, 'utf8')) as RulesetDefinition;
}

export function loadRuleset(): Ruleset {
  const definition = readRulesetDefinition();
  const resolve = (name: unknown) => {
    if (typeof name !== 'string' || !(name in EXTENDS)) throw new Error(`.spectral.yaml extends an unknown ruleset: ${String(name)}`);
    return EXTENDS[name];
  };
  const extendsList = definition.extends.map((e) => (Array.isArray(e) ? [resolve(e[0]), e[1]] : resolve(e)));
  return new Ruleset({ ...definition, extends: extendsList } as never, { source: RULESET_FILE });
}

/**
 * A JSON pointer exactly as Spectral compares override paths (@stoplight/json pathToPointer): ~ and / escaped,
 * then characters such as { and } percent-encoded.
 */
function pointer(...segments: string[]): string {
  return pathToPointer(segments);
}

/** The generated overrides: every response-only component schema and every operation's responses. */
export function responseOverridesBlock(doc: OpenAPIObject): string {
  const file = path.relative(path.dirname(RULESET_FILE), DOCUMENT_FILE).split(path.sep).join('/');
  const targets = [
    ...responseOnlySchemaNames(doc).map((name) => pointer('components', 'schemas', name)),
    ...Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item as object).map((method) => pointer('paths', p, method, 'responses'))),
  ];
  return (
    '  - files:\n' +
    targets.map((t) => `      - "${file}${t}"\n`).join('') +
    '    rules:\n' +
    REQUEST_ONLY_RULES.map((r) => `      ${r}: "off"\n`).join('')
  );
}

/** The ruleset file with the generated block for `doc`; written back when `write`. Answers [current, expected]. */
export function syncResponseOverrides(doc: OpenAPIObject, write: boolean): [string, string] {
  const current = fs.readFileSync(RULESET_FILE, 'utf8');
  const start = current.indexOf(BEGIN);
  const end = current.indexOf(END);
  if (start < 0 || end < start) throw new Error(`.spectral.yaml lacks the markers of the generated response overrides`);
  const expected = current.slice(0, start + BEGIN.length) + responseOverridesBlock(doc) + current.slice(end);
  if (write && expected !== current) fs.writeFileSync(RULESET_FILE, expected);
  return [current, expected];
}
