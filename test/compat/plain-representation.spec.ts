import type { DataSource } from 'typeorm';
import Fastify from 'fastify';
import type { OpenAPIObject } from '@nestjs/swagger';
import { documentPlainRepresentation, routeCompatUrl, servePlainRepresentation } from '../../src/compat/compat';
import { PlainRepresentation, SchemaObject } from '../../src/compat/plain-representation';

const schemas: Record<string, SchemaObject> = {
  SlugDto: { type: 'object', properties: { slugValue: { type: 'string' } }, required: ['slugValue'] },
  EmailResponse: { type: 'object', properties: { email: { type: 'string' } } },
  SortObjectDto: { type: 'object', properties: { property: { type: 'string' }, direction: { type: 'string' } } },
  PageableFormBDto: { type: 'object', properties: { pageNumber: { type: 'integer' }, sort: { type: 'array', items: { $ref: '#/components/schemas/SortObjectDto' } } } },
  PageFormBDto: {
    type: 'object',
    properties: {
      number: { type: 'integer' },
      pageable: { $ref: '#/components/schemas/PageableFormBDto' },
      sort: { type: 'array', items: { $ref: '#/components/schemas/SortObjectDto' } },
    },
  },
  Thing: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      slug: { $ref: '#/components/schemas/SlugDto' },
      owner: { nullable: true, allOf: [{ $ref: '#/components/schemas/EmailResponse' }] },
      parent: { $ref: '#/components/schemas/Thing' }, // refers to itself
      labels: { type: 'object', additionalProperties: { type: 'string' } },
    },
  },
  Plain: { type: 'object', properties: { name: { type: 'string' } } },
};

const page = (items: SchemaObject): SchemaObject => ({
  allOf: [{ $ref: '#/components/schemas/PageFormBDto' }, { properties: { content: { type: 'array', items } } }],
});

describe('the plain representation (derived from response schemas)', () => {
  const plain = new PlainRepresentation(schemas);

  it('maps Slug and Email objects to strings and form B sorts to form A, at any depth, without touching the input', () => {
    const mapper = plain.mapperOf(page({ $ref: '#/components/schemas/Thing' }))!;
    const thing = {
      name: 'a',
      slug: { slugValue: 'a' },
      owner: { email: 'a@example.com' },
      parent: { name: 'p', slug: { slugValue: 'p' }, owner: null, parent: null, labels: { slugValue: 'kept' } },
      labels: { x: 'y' },
    };
    const input = {
      number: 0,
      content: [thing],
      sort: [{ property: 'name', direction: 'ASC' }],
      pageable: { pageNumber: 0, sort: [{ property: 'name', direction: 'ASC' }] },
    };
    const before = structuredClone(input);
    expect(mapper(input)).toEqual({
      number: 0,
      content: [{ name: 'a', slug: 'a', owner: 'a@example.com', parent: { name: 'p', slug: 'p', owner: null, parent: null, labels: { slugValue: 'kept' } }, labels: { x: 'y' } }],
      sort: { empty: false, sorted: true, unsorted: false },
      pageable: { pageNumber: 0, sort: { empty: false, sorted: true, unsorted: false } },
    });
    expect(input).toEqual(before); // answers may be shared (caches): they are copied, never changed
    expect(mapper({ number: 0, content: [], sort: [], pageable: { sort: [] } })).toMatchObject({ sort: { empty: true, sorted: false, unsorted: true } });
  });

  it('has no mapper for schemas that are plain already, and derives plain schemas as <Name>Plain components', () => {
    expect(plain.mapperOf({ $ref: '#/components/schemas/Plain' })).toBeNull();
    expect(plain.mapperOf({ type: 'array', items: { $ref: '#/components/schemas/Plain' } })).toBeNull();
    const derived: Record<string, SchemaObject> = {};
    expect(plain.plainSchemaOf({ $ref: '#/components/schemas/Plain' }, derived)).toEqual({ $ref: '#/components/schemas/Plain' });
    expect(plain.plainSchemaOf({ $ref: '#/components/schemas/Thing' }, derived)).toEqual({ $ref: '#/components/schemas/ThingPlain' });
    expect(derived.ThingPlain.properties!.slug).toMatchObject({ type: 'string' });
    expect(derived.ThingPlain.properties!.owner).toMatchObject({ type: 'string', nullable: true });
    expect(derived.ThingPlain.properties!.parent).toEqual({ $ref: '#/components/schemas/ThingPlain' });
    const pageSchema = plain.plainSchemaOf(page({ $ref: '#/components/schemas/Thing' }), derived);
    expect(derived.PageFormBDtoPlain.properties!.sort).toMatchObject({ type: 'object', properties: { empty: { type: 'boolean' } } });
    expect(derived.PageableFormBDtoPlain.properties!.sort.type).toBe('object');
    expect(JSON.stringify(pageSchema)).toContain('PageFormBDtoPlain');
  });

  it('routes only /compat/api/v1, /compat/sts/v1 and /compat/admin/v1 to the unprefixed route', () => {
    expect(routeCompatUrl({ url: '/compat/api/v1/memberships?page=1' })).toBe('/api/v1/memberships?page=1');
    expect(routeCompatUrl({ url: '/compat/sts/v1/personal-access-tokens' })).toBe('/sts/v1/personal-access-tokens');
    expect(routeCompatUrl({ url: '/compat/admin/v1/clusters' })).toBe('/admin/v1/clusters');
    for (const url of ['/compat/health', '/compat', '/compat/', '/compatible/api/v1/x', '/api/v1/compat/api/v1', '/compat/api/v2/x']) {
      expect(routeCompatUrl({ url })).toBe(url);
    }
  });

  it('works on the answer object, so it also holds for a route with a compiled response serializer', async () => {
    // A route whose answer Fastify serialises with a serializer compiled from the interface's schema (what
    // the hot routes may move to): /compat still answers the plain representation, the interface path its own.
    const document = {
      openapi: '3.0.0',
      info: { title: 't', version: '1' },
      paths: {
        '/api/v1/things/{thingSlug}': { get: { responses: { '200': { content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } } } },
        '/admin/v1/things': { get: { responses: { '200': { content: { 'application/json': { schema: page({ $ref: '#/components/schemas/Thing' }) } } } } } },
      },
      components: { schemas },
    } as unknown as OpenAPIObject;
    const app = Fastify({ rewriteUrl: routeCompatUrl });
    // No cluster in these answers, so the written forms are never read.
    servePlainRepresentation(app, document, { query: async () => [] } as unknown as DataSource);
    const thingSchema = {
      type: 'object',
      properties: {
        name: { type: 'string' },
        slug: { type: 'object', properties: { slugValue: { type: 'string' } } },
        owner: { type: 'object', nullable: true, properties: { email: { type: 'string' } } },
      },
    };
    app.get('/api/v1/things/:thingSlug', { schema: { response: { 200: thingSchema } } }, async (req) => ({
      name: 'n',
      slug: { slugValue: (req.params as { thingSlug: string }).thingSlug },
      owner: { email: 'o@example.com' },
      internal: 'not in the schema',
    }));
    app.get('/admin/v1/things', async () => ({ number: 0, content: [{ name: 'n', slug: { slugValue: 'n' } }], sort: [], pageable: { sort: [] } }));
    await app.ready();
    const iface = await app.inject({ method: 'GET', url: '/api/v1/things/t1' });
    expect(iface.json()).toEqual({ name: 'n', slug: { slugValue: 't1' }, owner: { email: 'o@example.com' } });
    const compat = await app.inject({ method: 'GET', url: '/compat/api/v1/things/t1' });
    expect(compat.statusCode).toBe(200);
    expect(compat.headers['content-type']).toMatch(/application\/json/);
    expect(compat.json()).toMatchObject({ name: 'n', slug: 't1', owner: 'o@example.com' });
    const admin = await app.inject({ method: 'GET', url: '/admin/v1/things' });
    expect(admin.json()).toEqual({ number: 0, content: [{ name: 'n', slug: 'n' }], sort: { empty: true, sorted: false, unsorted: true }, pageable: { sort: { empty: true, sorted: false, unsorted: true } } });
    await app.close();

    const published = documentPlainRepresentation(document) as unknown as { paths: Record<string, { get: { responses: Record<string, { content: Record<string, { schema: unknown }> }> } }> };
    expect(JSON.stringify(published.paths['/admin/v1/things'].get.responses['200'].content['application/json'].schema)).toContain('ThingPlain');
    expect(published.paths['/api/v1/things/{thingSlug}'].get.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Thing' });
    expect((document.components!.schemas as Record<string, unknown>).ThingPlain).toBeUndefined(); // the input is not changed
  });
});
