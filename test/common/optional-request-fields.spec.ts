import * as fs from 'fs';
import * as path from 'path';

/**
 * Every optional request field says what leaving it out means (docs/adr/0090-optional-request-fields.md), checked over
 * the committed document (test/common/openapi.e2e-spec.ts keeps it equal to the running service's): an optional
 * property of a request body, or an optional query parameter, passes when
 * - its schema has a `default`, or
 * - its description names the default or what leaving it out means ("default", "left out", "omitted", "without it",
 *   "when absent"), or
 * - it belongs to a partial update: the body's schema says "A field left out keeps its current value.", or
 * - it is listed in test/fixtures/refused-when-missing.json with its reason (optional in the interface, yet a request
 *   without it is refused with a 400 naming it, and its description says so).
 */
type Schema = {
  $ref?: string;
  type?: string | string[];
  description?: string;
  default?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: Schema | boolean;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
};
type Parameter = { name: string; in: string; required?: boolean; description?: string; schema?: Schema; $ref?: string };
type Operation = { requestBody?: { content: Record<string, { schema: Schema }> }; parameters?: Parameter[] };
type Refused = { schema: string; field: string; reason: string };

const doc = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../docs/openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema>; parameters?: Record<string, Parameter> };
};
const refused = JSON.parse(fs.readFileSync(path.resolve(__dirname, '../fixtures/refused-when-missing.json'), 'utf8')) as Refused[];

const SAYS_WHAT_MISSING_MEANS = /\bdefaults?\b|\bleft out\b|\bleaving it out\b|\bomitted\b|\bwithout it\b|\bwhen absent\b|\bor absent\b/i;
const PARTIAL_UPDATE = /a field left out keeps its current value\./i;
const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

const refName = (ref: string) => ref.split('/').pop()!;
const describes = (s: Schema): string => [s.description, ...(s.allOf ?? []).map((p) => p.description)].filter(Boolean).join(' ');
const hasDefault = (s: Schema): boolean => s.default !== undefined || (s.allOf ?? []).some((p) => p.default !== undefined);

/** Optional properties of every schema a request body reaches, named `Schema.property` (nested maps and items too). */
function optionalBodyFields(): { name: string; schema: string; field: string; property: Schema; owner: Schema }[] {
  const found = new Map<string, { name: string; schema: string; field: string; property: Schema; owner: Schema }>();
  const seen = new Set<string>();
  const walk = (s: Schema | boolean | undefined, where: string) => {
    if (!s || typeof s === 'boolean') return;
    if (s.$ref) {
      const name = refName(s.$ref);
      if (seen.has(name)) return;
      seen.add(name);
      return walk(doc.components.schemas[name], name);
    }
    for (const part of [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])]) walk(part, where);
    walk(s.items, `${where}[]`);
    walk(s.additionalProperties, `${where}{}`);
    const required = new Set(s.required ?? []);
    for (const [field, property] of Object.entries(s.properties ?? {})) {
      if (!required.has(field)) found.set(`${where}.${field}`, { name: `${where}.${field}`, schema: where, field, property, owner: s });
      walk(property, `${where}.${field}`);
    }
  };
  for (const item of Object.values(doc.paths))
    for (const method of METHODS) for (const media of Object.values(item[method]?.requestBody?.content ?? {})) walk(media.schema, 'body');
  return [...found.values()];
}

function optionalQueryParameters(): { name: string; parameter: Parameter }[] {
  const found = new Map<string, { name: string; parameter: Parameter }>();
  for (const [route, item] of Object.entries(doc.paths))
    for (const method of METHODS)
      for (const p of item[method]?.parameters ?? []) {
        const parameter = p.$ref ? doc.components.parameters![refName(p.$ref)] : p;
        if (parameter.in === 'query' && !parameter.required) found.set(`${method.toUpperCase()} ${route} ?${parameter.name}`, { name: `${method.toUpperCase()} ${route} ?${parameter.name}`, parameter });
      }
  return [...found.values()];
}

const isRefused = (schema: string, field: string) => refused.some((r) => r.schema === schema && r.field === field);

describe('optional request fields say what leaving them out means', () => {
  it('every optional property of a request body has a default, says what missing means, belongs to a partial update, or is refused when missing', () => {
    const silent = optionalBodyFields()
      .filter(({ schema, field, property, owner }) => {
        if (hasDefault(property) || SAYS_WHAT_MISSING_MEANS.test(describes(property))) return false;
        if (PARTIAL_UPDATE.test(owner.description ?? '')) return false;
        return !isRefused(schema, field);
      })
      .map((f) => f.name);
    expect(silent).toEqual([]);
  });

  it('every optional query parameter has a default or says what leaving it out means', () => {
    const silent = optionalQueryParameters()
      .filter(({ parameter }) => !(hasDefault(parameter.schema ?? {}) || SAYS_WHAT_MISSING_MEANS.test(parameter.description ?? '')))
      .map((p) => p.name);
    expect(silent).toEqual([]);
  });

  it('lists as refused when missing only optional fields that exist, each with its reason and a description naming the 400', () => {
    const fields = new Map(optionalBodyFields().map((f) => [`${f.schema}.${f.field}`, f]));
    for (const r of refused) {
      const field = fields.get(`${r.schema}.${r.field}`);
      expect({ field: `${r.schema}.${r.field}`, optional: !!field, reason: r.reason.length > 20 }).toEqual({ field: `${r.schema}.${r.field}`, optional: true, reason: true });
      expect({ field: `${r.schema}.${r.field}`, says400: /\b400\b/.test(describes(field!.property)) }).toEqual({ field: `${r.schema}.${r.field}`, says400: true });
    }
  });
});
