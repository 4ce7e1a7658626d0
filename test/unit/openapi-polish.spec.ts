import { ArrayMaxSize, IsEmail, IsInt, IsString, IsUUID, Length, Matches, Max, MaxLength, Min } from 'class-validator';
import type { OpenAPIObject } from '@nestjs/swagger';
import { MAX_PATH_PARAM_LENGTH, polishOpenApi, requestSchemaNames, responseOnlySchemaNames } from '../../src/common/openapi-polish';

/** A request DTO whose @ApiProperty (the schema below) states none of the bounds its validators enforce. */
class PolishProbeRequest {
  @IsString() @Length(2, 40) name: string;
  @IsString() @MaxLength(12, { each: true }) @ArrayMaxSize(7) tags: string[];
  @IsInt() @Min(1) @Max(90) days: number;
  @IsUUID() owner: string;
  @IsEmail() contact: string;
  @Matches(/^[a-z]+$/) code: string;
  @Matches(/^[a-z]+$/i) loose: string;
}
void PolishProbeRequest;

function probeDocument(): OpenAPIObject {
  return {
    openapi: '3.0.0',
    info: { title: 't', version: '1' },
    paths: {
      '/api/v1/probes/{probeSlug}': {
        post: {
          operationId: 'ProbeController_create',
          parameters: [{ name: 'probeSlug', in: 'path', required: true, schema: { type: 'string' } }],
          requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/PolishProbeRequest' } } } },
          responses: {
            '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/PolishProbeResponse' } } } },
            '404': { description: 'not found' },
            '500': { description: 'error' },
          },
        },
      },
    },
    components: {
      schemas: {
        PolishProbeRequest: {
          type: 'object',
          properties: {
            name: { type: 'string' },
            tags: { type: 'array', items: { type: 'string' } },
            days: { type: 'integer' },
            owner: { type: 'string', format: 'uuid' },
            contact: { type: 'string' },
            code: { type: 'string' },
            loose: { type: 'string' },
          },
        },
        PolishProbeResponse: { type: 'object', properties: { count: { type: 'integer' }, total: { type: 'integer', format: 'int64' } } },
      },
    },
  } as never;
}

describe('openapi-polish bounds', () => {
  const doc = polishOpenApi(probeDocument(), new Set());
  const schemas = doc.components!.schemas as Record<string, { properties: Record<string, Record<string, unknown>> }>;

  it('tells request schemas from response-only ones', () => {
    const fresh = probeDocument();
    expect([...requestSchemaNames(fresh)]).toEqual(['PolishProbeRequest']);
    expect(responseOnlySchemaNames(fresh)).toEqual(['PolishProbeResponse']);
  });

  it('states the bounds the validators of a request DTO enforce', () => {
    const p = schemas.PolishProbeRequest.properties;
    expect(p.name).toMatchObject({ minLength: 2, maxLength: 40 });
    expect(p.tags).toMatchObject({ maxItems: 7, items: { type: 'string', maxLength: 12 } });
    expect(p.days).toMatchObject({ minimum: 1, maximum: 90, format: 'int32' });
    expect(p.owner).toMatchObject({ maxLength: 36 });
    expect(p.contact).toMatchObject({ format: 'email' });
    expect(p.code).toMatchObject({ pattern: '^[a-z]+$' });
    // A case-insensitive pattern would be stricter in the document than in the service.
    expect(p.loose.pattern).toBeUndefined();
  });

  it('documents response-only integers with their natural range, keeping a stated format', () => {
    const p = schemas.PolishProbeResponse.properties;
    expect(p.count).toMatchObject({ format: 'int32', minimum: 0, maximum: 2147483647 });
    expect(p.total).toMatchObject({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
  });

  it('bounds path parameters and lists the RateLimit headers on 2xx and 4xx answers of metered operations', () => {
    const op = (doc.paths['/api/v1/probes/{probeSlug}'] as Record<string, { parameters: { schema: Record<string, unknown> }[]; responses: Record<string, { headers?: Record<string, unknown> }> }>).post;
    expect(op.parameters[0].schema.maxLength).toBe(MAX_PATH_PARAM_LENGTH);
    // The 200 of a POST also says when it is a replayed answer (Idempotency-Key).
    expect(Object.keys(op.responses['200'].headers ?? {})).toEqual(['Idempotent-Replayed', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
    expect(Object.keys(op.responses['404'].headers ?? {})).toEqual(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
    expect(op.responses['500'].headers).toBeUndefined();
    const publicDoc = polishOpenApi(probeDocument(), new Set(['post /api/v1/probes/{probeSlug}']));
    const publicOp = (publicDoc.paths['/api/v1/probes/{probeSlug}'] as Record<string, { responses: Record<string, { headers?: unknown }> }>).post;
    expect(publicOp.responses['200'].headers).toBeUndefined();
  });

  it('gives an authenticated POST the Idempotency-Key header, its 409 and 422 answers; a public one none of them', () => {
    const op = (doc.paths['/api/v1/probes/{probeSlug}'] as Record<string, { parameters: { name: string; in: string; required?: boolean }[]; responses: Record<string, { description?: string; headers?: Record<string, unknown> }> }>).post;
    expect(op.parameters.find((p) => p.name === 'Idempotency-Key')).toMatchObject({ in: 'header', required: false });
    expect(op.responses['409'].description).toMatch(/Idempotency-Key is still being processed/);
    expect(Object.keys(op.responses['409'].headers ?? {})).toContain('Retry-After');
    expect(op.responses['422'].description).toMatch(/Idempotency-Key was used for another request/);
    const publicDoc = polishOpenApi(probeDocument(), new Set(['post /api/v1/probes/{probeSlug}']));
    const publicOp = (publicDoc.paths['/api/v1/probes/{probeSlug}'] as Record<string, { parameters: { name: string }[]; responses: Record<string, unknown> }>).post;
    expect(publicOp.parameters.map((p) => p.name)).toEqual(['probeSlug']);
    expect(publicOp.responses['422']).toBeUndefined();
  });
});
