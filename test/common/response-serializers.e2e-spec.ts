import type { OpenAPIObject } from '@nestjs/swagger';
import Fastify from 'fastify';
import { compileResponseSerializers, serializerSchema, useCompiledResponseSerializers } from '../../src/common/response-serializers';
import { clusterBody, clustersPath, createOrgFixture, OrgFixture, settle } from '../clusters/cluster-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/** A document with one closed DTO, a nullable reference written each way, and a free-form map. */
function miniDocument(nullableRef: Record<string, unknown>): OpenAPIObject {
  return {
    openapi: '3.0.0',
    info: { title: 't', version: '1' },
    paths: {
      '/things/{id}': {
        get: { responses: { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } } },
      },
    },
    components: {
      schemas: {
        Ref: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        Thing: {
          type: 'object',
          required: ['id', 'labels'],
          properties: {
            id: { type: 'integer', default: 7 },
            kind: { type: 'string', enum: ['a', 'b'], const: 'a' },
            labels: { type: 'object', additionalProperties: { type: 'string' } },
            settings: { type: 'object' },
            ref: nullableRef,
            refs: { type: 'array', items: { $ref: '#/components/schemas/Ref' } },
            when: { type: 'string', format: 'date-time' },
            day: { type: 'string', format: 'date' },
          },
        },
      },
    },
  } as unknown as OpenAPIObject;
}

const NULLABLE_FORMS: Record<string, Record<string, unknown>> = {
  'nullable + allOf (OpenAPI 3.0, @nestjs/swagger)': { nullable: true, type: 'object', allOf: [{ $ref: '#/components/schemas/Ref' }] },
  'oneOf with {type: null} (OpenAPI 3.1)': { oneOf: [{ $ref: '#/components/schemas/Ref' }, { type: 'null' }] },
  'anyOf with {type: null}': { anyOf: [{ type: 'null' }, { $ref: '#/components/schemas/Ref' }] },
  'type array': { type: ['object', 'null'], properties: { name: { type: 'string' } } },
};

describe('compiled response serializers (fast-json-stringify from the OpenAPI document)', () => {
  describe.each(Object.entries(NULLABLE_FORMS))('a nullable reference written as %s', (_form, ref) => {
    const [serializer] = compileResponseSerializers(miniDocument(ref), { include: () => true }).get('GET /things/:id')!.values();

    it('writes null as null, an object in full, free-form maps as they are, and what JSON.stringify writes for the rest', () => {
      const payloads: Record<string, unknown>[] = [
        { id: 1, labels: { 'app.kubernetes.io/name': 'web', constructor: 'x' }, settings: { deep: [1, { a: null }] }, ref: null, refs: [], when: new Date(0) },
        { id: 2, labels: {}, ref: { name: 'r' }, refs: [{ name: 'a' }, { name: 'b' }], when: null, kind: 'b', day: new Date(86_400_000) },
        // Values of another type than declared are not coerced: the answer is JSON.stringify's.
        { id: 1.5, labels: { n: 3 }, ref: { name: 5 }, refs: [null], when: 'not a date', kind: null },
        // Missing required properties and defaults: nothing is invented.
        { labels: { a: 'b' } },
      ];
      for (const p of payloads) expect(JSON.parse(serializer(p))).toEqual(JSON.parse(JSON.stringify(p)));
    });

    it('rewrites the schema to null-tolerant types without required, default, const or other formats', () => {
      const s = serializerSchema(miniDocument(ref), { $ref: '#/components/schemas/Thing' }) as Record<string, any>;
      expect(s.required).toBeUndefined();
      expect(s.properties.id).toEqual({ type: ['integer', 'null'] });
      expect(s.properties.kind).toEqual({ type: ['string', 'null'] });
      expect(s.properties.settings).toEqual({});
      expect(s.properties.labels).toEqual({});
      expect(s.properties.ref).toEqual({ type: ['object', 'null'], properties: { name: { type: ['string', 'null'] } } });
      expect(s.properties.when).toEqual({ type: ['string', 'null'], format: 'date-time' });
      expect(s.properties.day).toEqual({ type: ['string', 'null'] });
    });
  });

  it('a reference that holds itself, and oneOf of two real branches, are free-form', () => {
    const doc = miniDocument({ oneOf: [{ $ref: '#/components/schemas/Ref' }, { type: 'string' }] });
    (doc.components!.schemas as Record<string, any>).Ref.properties.parent = { $ref: '#/components/schemas/Ref' };
    const s = serializerSchema(doc, { $ref: '#/components/schemas/Thing' }) as Record<string, any>;
    expect(s.properties.ref).toEqual({});
    expect(s.properties.refs.items.properties.parent).toEqual({});
  });

  describe('on a Fastify route', () => {
    const answer = { id: 1, labels: {}, undeclared: 'kept by JSON.stringify only' };
    async function serve(check: boolean) {
      const fastify = Fastify();
      useCompiledResponseSerializers(fastify, miniDocument({ type: 'string' }), { include: () => true, check });
      fastify.get('/things/:id', async () => answer);
      fastify.get('/other', async () => answer);
      await fastify.ready();
      return fastify;
    }

    it('answers through the compiled serializer: a property the schema does not name is dropped (the danger the check guards against)', async () => {
      const fastify = await serve(false);
      expect((await fastify.inject('/things/1')).json()).toEqual({ id: 1, labels: {} });
      // A route the document does not describe keeps Fastify's JSON.stringify.
      expect((await fastify.inject('/other')).json()).toEqual(answer);
      await fastify.close();
    });

    it('with the check (the test suite), such an answer fails with 500 instead', async () => {
      const fastify = await serve(true);
      const res = await fastify.inject('/things/1');
      expect(res.statusCode).toBe(500);
      expect(res.json().message).toContain('$.undeclared');
      await fastify.close();
    });
  });

  describe('the hot cluster routes of the real app', () => {
    let t: TestApp;
    let f: OrgFixture;
    let document: OpenAPIObject;

    beforeAll(async () => {
      t = await startTestApp();
      f = await createOrgFixture(t);
      document = (await t.http().get('/v3/api-docs')).body;
    });
    afterAll(() => t.close());

    /** The route's compiled serializer (as the app compiles it, without the check) gives back what was answered. */
    function expectRoundTrip(route: string, body: unknown) {
      const serializer = compileResponseSerializers(document, { include: (r) => r === route }).get(route)?.get('200');
      expect(serializer).toBeDefined();
      expect(JSON.parse(serializer!(body))).toEqual(body);
    }

    it('get and PATCH: the compiled output equals JSON.stringify of the same answer (nullables, maps, extended fields); a list page is written by JSON.stringify', async () => {
      const created = await t
        .as(f.users.member.token)
        .post(clustersPath(f))
        .send(
          clusterBody(f, {
            name: 'serial',
            description: null,
            addons: { 'metrics-server': { enabled: true, customValues: { 'replicas': '2', 'a.b/c': 'x' } } },
            nodePools: [{ name: 'workers', nodeSize: 'm5.large', minSize: 2, maxSize: 4, labels: { tier: 'web' } }],
          }),
        );
      expect(created.status).toBe(200);
      await settle(t);
      const base = `/api/v1/orgs/${f.orgSlug}/clusters`;
      const viewer = t.as(f.users.viewer.token);

      const list = await viewer.get(`${base}?includeDetails=true&show-compute=true`);
      expect(list.status).toBe(200);
      expect(list.body.content.map((c: { name: string }) => c.name)).toEqual(['serial']);
      // A page is written by JSON.stringify (cheaper for lists, measured; see isList): no compiled serializer, and the
      // properties come in the order the view builds them.
      const listRoute = 'GET /api/v1/orgs/:organisationSlug/clusters';
      expect(compileResponseSerializers(document, { include: (r) => r === listRoute }).get(listRoute)).toBeUndefined();
      expect(list.text.startsWith('{"content":[{"addons":')).toBe(true);

      const one = await viewer.get(`${base}/${f.envSlug}/serial?includeDetails=true`);
      expect(one.status).toBe(200);
      expect(one.body.description).toBeNull();
      expect(one.body.addons['metrics-server'].customValues).toEqual({ replicas: '2', 'a.b/c': 'x' });
      expect(one.body.maintenanceSchedule).toBeNull();
      expect(one.body.cloudCredentials.identity).toBe(f.credentialIdentity);
      expectRoundTrip('GET /api/v1/orgs/:organisationSlug/clusters/:environmentSlug/:clusterSlug', one.body);
      // The route answers through the compiled serializer: properties in the schema's order (actualState first),
      // not in the order the view builds them (actualState last).
      expect(one.text.startsWith('{"actualState":')).toBe(true);

      const patched = await t.as(f.users.member.token).patch(`${base}/${f.envSlug}/serial`).send({ description: 'now described' });
      expect(patched.status).toBe(200);
      expect(patched.body.description).toBe('now described');
      expect(patched.body.upstreamCluster).toBeNull();
      expect(patched.body.downstreamClusters).toEqual([]);
      expect(patched.body.clusterAutoscalerSettings).toBeDefined();
      expectRoundTrip('PATCH /api/v1/orgs/:organisationSlug/clusters/:environmentSlug/:clusterSlug', patched.body);

      // /compat answers the plain representation through JSON.stringify (Slug objects as strings).
      const compat = await viewer.get(`/compat${base}/${f.envSlug}/serial`);
      expect(compat.status).toBe(200);
      expect(compat.body.slug).toBe('serial');
    });
  });
});
