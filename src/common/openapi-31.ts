import type { OpenAPIObject } from '@nestjs/swagger';

/**
 * The document is published as OpenAPI 3.1, whose schemas are JSON Schema 2020-12, so that any strict validator
 * (Ajv, Prism, fast-json-stringify, openapi-typescript) reads a nullable value the same way. @nestjs/swagger
 * writes the OpenAPI 3.0 form; this turns it into the 3.1 form after everything else has been added:
 *
 * - `{type: 'string', nullable: true}` becomes `{type: ['string', 'null']}` (an `enum` gains `null`);
 * - a nullable reference, which Nest writes as `{type: 'object', nullable: true, allOf: [{$ref}]}` (a schema no
 *   value `null` can satisfy, since the referenced schema wants an object), becomes `{oneOf: [{$ref}, {type: 'null'}]}`;
 * - boolean `exclusiveMinimum`/`exclusiveMaximum` become the numbers of 2020-12.
 *
 * Nothing else differs between the two versions for what this document uses (`example` stays valid in 3.1).
 */
export const OPENAPI_VERSION = '3.1.0';

type Schema = Record<string, unknown>;

/** Keys whose values are data (examples, defaults, enums, extensions), not schemas: not walked. */
const DATA_KEYS = new Set(['example', 'examples', 'default', 'enum', 'const']);

function convertSchema(schema: Schema): void {
  if (schema.nullable === true) {
    delete schema.nullable;
    const allOf = schema.allOf as Schema[] | undefined;
    if (allOf && allOf.length === 1 && typeof allOf[0].$ref === 'string') {
      delete schema.allOf;
      delete schema.type;
      schema.oneOf = [allOf[0], { type: 'null' }];
    } else if (typeof schema.type === 'string') {
      schema.type = [schema.type, 'null'];
      if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
    } else if (Array.isArray(schema.type)) {
      if (!schema.type.includes('null')) schema.type = [...schema.type, 'null'];
    } else if (typeof schema.$ref === 'string') {
      const { $ref, ...rest } = schema;
      for (const k of Object.keys(schema)) delete schema[k];
      Object.assign(schema, rest, { oneOf: [{ $ref }, { type: 'null' }] });
    }
  } else if (schema.nullable === false) delete schema.nullable;
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof schema[flag] !== 'boolean') continue;
    if (schema[flag] && typeof schema[bound] === 'number') {
      schema[flag] = schema[bound];
      delete schema[bound];
    } else delete schema[flag];
  }
}

function walk(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) walk(n);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const obj = node as Schema;
  convertSchema(obj);
  for (const [key, value] of Object.entries(obj)) {
    // Property names are the user's (a property may be called `default`): each one is a schema.
    if (key === 'properties' && value && typeof value === 'object') for (const prop of Object.values(value)) walk(prop);
    else if (!DATA_KEYS.has(key) && !key.startsWith('x-')) walk(value);
  }
}

/** Converts the document in place to OpenAPI 3.1 (see above) and returns it. */
export function toOpenApi31(doc: OpenAPIObject): OpenAPIObject {
  walk(doc.paths);
  walk(doc.components);
  (doc as { openapi: string }).openapi = OPENAPI_VERSION;
  return doc;
}
