import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import * as fs from 'fs';
import * as path from 'path';
import { NUMERIC_MAXIMA } from '../../src/common/openapi-examples';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The Swagger UI page and the document are something a person can use: the document's version is the service's,
 * examples are realistic (no int32/int64 maxima shown as values, a page example with two items and the counts that
 * go with them, every whole example valid against its schema), pages are named in words, and the Swagger UI has
 * the filter box, deep links, persisted authorization and request durations.
 */
type Schema = Record<string, unknown>;
type Media = { schema?: Schema; example?: unknown };
type Doc = {
  openapi: string;
  info: { version: string; description: string };
  paths: Record<string, Record<string, { responses: Record<string, { description: string; content?: Record<string, Media> }> }>>;
  components: { schemas: Record<string, Schema> };
};

const PACKAGE_VERSION = (JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as { version: string }).version;

/** Every value under an `example`/`examples`/`default` key, with where it is. */
function exampleValues(node: unknown, at: string, out: [string, unknown][] = []): [string, unknown][] {
  if (Array.isArray(node)) node.forEach((n, i) => exampleValues(n, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'example' || k === 'examples' || k === 'default') out.push([`${at}/${k}`, v]);
      else exampleValues(v, `${at}/${k}`, out);
    }
  }
  return out;
}

function numbersIn(value: unknown): number[] {
  if (typeof value === 'number') return [value];
  if (Array.isArray(value)) return value.flatMap(numbersIn);
  if (value && typeof value === 'object') return Object.values(value).flatMap(numbersIn);
  return [];
}

const isPage = (schema: Schema | undefined) =>
  Array.isArray(schema?.allOf) && /\/PageForm[AB]Dto(Plain)?$/.test(String((schema.allOf as Schema[])[0]?.$ref ?? ''));

describe('A document and a Swagger UI a person can use', () => {
  let t: TestApp;
  let doc: Doc;

  beforeAll(async () => {
    t = await startTestApp();
    doc = (await t.http().get('/v3/api-docs').expect(200)).body;
  });
  afterAll(() => t.close());

  it("states the service's version (package.json) and is OpenAPI 3.1", () => {
    expect(doc.info.version).toBe(PACKAGE_VERSION);
    expect(doc.openapi).toBe('3.1.0');
  });

  it('shows no int32/int64 maximum as an example, and gives every bounded number an example or default', () => {
    const maxima = exampleValues(doc, '#').filter(([, v]) => numbersIn(v).some((n) => NUMERIC_MAXIMA.includes(n)));
    expect(maxima.map(([where]) => where)).toEqual([]);
    // Swagger UI samples a number without example from its maximum: every one with a maximum needs a value of its own.
    const unsampled: string[] = [];
    const visit = (node: unknown, at: string) => {
      if (Array.isArray(node)) return node.forEach((n, i) => visit(n, `${at}/${i}`));
      if (!node || typeof node !== 'object') return;
      const s = node as Schema;
      const numeric = ['integer', 'number'].some((ty) => s.type === ty || (Array.isArray(s.type) && s.type.includes(ty)));
      if (numeric && typeof s.maximum === 'number' && s.example === undefined && s.default === undefined) unsampled.push(at);
      for (const [k, v] of Object.entries(s)) if (!['example', 'examples', 'default', 'enum'].includes(k)) visit(v, `${at}/${k}`);
    };
    visit(doc.paths, '#/paths');
    visit(doc.components, '#/components');
    expect(unsampled).toEqual([]);
  });

  it('gives every page a two-item example whose counts agree, valid against its schema, named in words', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'doc', components: doc.components });
    const absolute = (n: unknown): unknown =>
      Array.isArray(n)
        ? n.map(absolute)
        : n && typeof n === 'object'
          ? Object.fromEntries(Object.entries(n).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? `doc${v}` : absolute(v)]))
          : n;
    const problems: string[] = [];
    let pages = 0;
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, response] of Object.entries(op.responses)) {
          const media = response.content?.['application/json'];
          if (!media?.schema || !isPage(media.schema)) continue;
          pages++;
          const where = `${method.toUpperCase()} ${p} ${status}`;
          if (!/^(Page of [a-z ]+|OK)$/.test(response.description)) problems.push(`${where}: described as "${response.description}"`);
          const ex = media.example as
            | { content: unknown[]; numberOfElements: number; totalElements: number; totalPages: number; size: number; empty: boolean; number: number }
            | undefined;
          if (!ex) {
            problems.push(`${where}: no example`);
            continue;
          }
          if (ex.content.length !== 2 || ex.numberOfElements !== 2) problems.push(`${where}: ${ex.content.length} items, numberOfElements ${ex.numberOfElements}`);
          if (ex.empty !== (ex.numberOfElements === 0)) problems.push(`${where}: empty ${ex.empty} with ${ex.numberOfElements} items`);
          if (ex.totalElements < ex.numberOfElements || ex.totalPages !== Math.ceil(ex.totalElements / ex.size)) {
            problems.push(`${where}: totalElements ${ex.totalElements}, totalPages ${ex.totalPages}, size ${ex.size}`);
          }
          if (JSON.stringify(ex.content[0]) === JSON.stringify(ex.content[1])) problems.push(`${where}: the two items are the same`);
          const validate = ajv.compile(absolute(media.schema) as object);
          if (!validate(ex)) problems.push(`${where}: example invalid: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
        }
      }
    }
    expect(pages).toBeGreaterThan(20);
    expect(problems).toEqual([]);
  });

  it('gives property examples that their own schemas accept', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    const problems: string[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      for (const [prop, raw] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
        if (raw.example === undefined || raw.$ref || raw.allOf || raw.oneOf || raw.anyOf) continue;
        const { example, ...rest } = raw;
        const items = rest.items as Schema | undefined;
        if (items?.$ref) continue;
        if (!ajv.validate(rest, example)) problems.push(`${name}.${prop}: ${JSON.stringify(example)} ${ajv.errorsText()}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('explains the page forms once, in the introduction', () => {
    expect(doc.info.description).toMatch(/form A is an object `\{empty, sorted, unsorted\}`, form B an array/);
  });

  it('serves the Swagger UI with the filter box, deep links, persisted authorization and request durations', async () => {
    const init = await t.http().get('/swagger-ui/swagger-ui-init.js').expect(200);
    const text = init.text;
    for (const option of ['filter', 'deepLinking', 'persistAuthorization', 'displayRequestDuration']) {
      expect(text).toMatch(new RegExp(`"${option}":\\s*true`));
    }
  });
});
