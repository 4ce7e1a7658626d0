import { ApiProperty } from '@nestjs/swagger';
import { ClusterResponse } from '../clusters/dto/cluster.dto';
import { NodePoolResponse } from '../clusters/dto/node-pool.dto';
import { EnvironmentResponse } from '../environments/dto/environment.dto';
import { OrganisationResponse } from '../organisations/dto/organisation.dto';
import { FieldShape, ObjectShape, PolicyVariableSchema } from './policy-schema';

/**
 * The CEL variables of a cluster policy, declared from the read models' OpenAPI metadata (the
 * `@ApiProperty` decorators of ClusterResponse, NodePoolResponse, EnvironmentResponse,
 * OrganisationResponse), so a field added to a response is a field of the policy variables too.
 *
 * Mapping: string/enum/date-time -> string, boolean -> bool, integer -> int, number -> double, a DTO class ->
 * a CEL object type of the same name, arrays -> list, string maps -> map<string, string>, other maps (and
 * classes whose property names are not CEL identifiers) -> map<string, dyn>. A nullable field is `dyn`, so
 * `x == null` can be written; its value still has the object type when present.
 */

const MODEL_PROPERTIES = 'swagger/apiModelProperties';
const MODEL_PROPERTIES_ARRAY = 'swagger/apiModelPropertiesArray';
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface SwaggerMeta {
  type?: unknown;
  isArray?: boolean;
  nullable?: boolean;
  additionalProperties?: { type?: string } | boolean;
  required?: boolean;
  enum?: unknown[];
  format?: string;
  maxLength?: number;
}

function propertiesOf(cls: Function): string[] {
  return ((Reflect.getMetadata(MODEL_PROPERTIES_ARRAY, cls.prototype) as string[] | undefined) ?? []).map((p) => p.replace(/^:/, ''));
}

function metaOf(cls: Function, prop: string): SwaggerMeta {
  return (Reflect.getMetadata(MODEL_PROPERTIES, cls.prototype, prop) as SwaggerMeta | undefined) ?? {};
}

const isModel = (t: unknown): t is Function => typeof t === 'function' && propertiesOf(t).length > 0;

/** The shapes of every class seen, by name: each CEL type is declared once. */
export class ShapeRegistry {
  readonly objects = new Map<string, ObjectShape>();

  /** The object shape of a DTO class; `pick`/`omit`/`extra` narrow or extend it (`name` renames it). */
  object(
    cls: Function,
    opts: { name?: string; pick?: string[]; omit?: string[]; extra?: Record<string, { shape: FieldShape; nullable: boolean }> } = {},
  ): ObjectShape {
    const name = opts.name ?? cls.name;
    const known = this.objects.get(name);
    if (known) return known;
    const shape: ObjectShape = { name, fields: {} };
    this.objects.set(name, shape);
    for (const prop of propertiesOf(cls)) {
      if (opts.pick && !opts.pick.includes(prop)) continue;
      if (opts.omit?.includes(prop)) continue;
      const meta = metaOf(cls, prop);
      const element = this.field(meta);
      shape.fields[prop] = { shape: meta.isArray ? { kind: 'list', element } : element, nullable: !!meta.nullable };
    }
    Object.assign(shape.fields, opts.extra ?? {});
    return shape;
  }

  private field(meta: SwaggerMeta): FieldShape {
    const t = meta.type;
    if (t === String || t === 'string') return { kind: 'string', ...stringBound(meta) };
    if (t === Boolean || t === 'boolean') return { kind: 'bool' };
    if (t === 'integer') return { kind: 'int' };
    if (t === Number || t === 'number') return { kind: 'double' };
    if (t === 'object' || t === Object) {
      const ap = meta.additionalProperties;
      return typeof ap === 'object' && ap?.type === 'string' ? { kind: 'stringMap' } : { kind: 'dynMap' };
    }
    if (isModel(t)) {
      // A class whose properties are not CEL identifiers (e.g. `scale-down-delay-after-add`) is read as a map.
      if (!propertiesOf(t).every((p) => IDENTIFIER.test(p))) return { kind: 'dynMap' };
      return { kind: 'object', type: this.object(t).name };
    }
    return { kind: 'dyn' };
  }
}

/** The longest value of a string field when its metadata says (enum, uuid, date-time, maxLength). */
function stringBound(meta: SwaggerMeta): { max?: number } {
  if (typeof meta.maxLength === 'number') return { max: meta.maxLength };
  if (meta.enum?.length && meta.enum.every((v) => typeof v === 'string')) return { max: Math.max(...meta.enum.map((v) => (v as string).length)) };
  if (meta.format === 'uuid') return { max: 36 };
  // toISOString() of a JavaScript date: 24 characters (27 with a six-digit year).
  if (meta.format === 'date-time') return { max: 27 };
  return {};
}

/** `request.user`: who makes the change (`identity` null and `username` `system` for the service itself). */
export class PolicyUserVariable {
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) identity: string | null;
  @ApiProperty({ example: 'alice' }) username: string;
  @ApiProperty({ description: 'true for a platform administrator' }) platformAdmin: boolean;
}

export const POLICY_OPERATIONS = ['CREATE', 'UPDATE', 'DELETE'] as const;
export type PolicyOperation = (typeof POLICY_OPERATIONS)[number];
export const POLICY_RESOURCES = ['clusters', 'nodePools', 'scheduledClusterUpgrades'] as const;
export type PolicyResource = (typeof POLICY_RESOURCES)[number];

/** `request`: the change being made. */
export class PolicyRequestVariable {
  @ApiProperty({ enum: POLICY_OPERATIONS, description: 'CREATE a cluster, UPDATE it (settings, status, version, node pools, a scheduled upgrade), DELETE it' })
  operation: PolicyOperation;
  @ApiProperty({ enum: POLICY_RESOURCES, description: 'What the request changes: the cluster itself, one of its node pools, or a scheduled upgrade of it' })
  resource: PolicyResource;
  @ApiProperty({ type: PolicyUserVariable }) user: PolicyUserVariable;
}

/** The policy object: the cluster response's fields (without the optional actualState) plus its node pools. */
export type PolicyClusterObject = Omit<ClusterResponse, 'actualState'> & { nodePools: NodePoolResponse[] };
export const ENVIRONMENT_VARIABLE_FIELDS = ['identity', 'name', 'slug', 'type', 'purpose', 'description'] as const;
export type PolicyEnvironmentVariable = Pick<EnvironmentResponse, (typeof ENVIRONMENT_VARIABLE_FIELDS)[number]>;
export const ORGANISATION_VARIABLE_FIELDS = ['identity', 'name', 'slug', 'type', 'upgradeSoakHours'] as const;
export type PolicyOrganisationVariable = Pick<OrganisationResponse, (typeof ORGANISATION_VARIABLE_FIELDS)[number]>;

/** The inputs of one evaluation, as plain JSON (so they can be handed to a worker thread as they are). */
export interface PolicyInput {
  object: PolicyClusterObject;
  oldObject: PolicyClusterObject | null;
  environment: PolicyEnvironmentVariable;
  organisation: PolicyOrganisationVariable;
  request: PolicyRequestVariable;
}

let schema: PolicyVariableSchema | undefined;

/**
 * The types of the five variables as plain data, built once from the DTO metadata (the executor's worker threads
 * receive it; see PolicyEvaluator).
 */
export function policyVariableSchema(): PolicyVariableSchema {
  if (schema) return schema;
  const registry = new ShapeRegistry();
  const pool = registry.object(NodePoolResponse);
  const cluster = registry.object(ClusterResponse, {
    name: 'Cluster',
    omit: ['actualState'],
    extra: { nodePools: { shape: { kind: 'list', element: { kind: 'object', type: pool.name } }, nullable: false } },
  });
  const environment = registry.object(EnvironmentResponse, { name: 'Environment', pick: [...ENVIRONMENT_VARIABLE_FIELDS] });
  const organisation = registry.object(OrganisationResponse, { name: 'Organisation', pick: [...ORGANISATION_VARIABLE_FIELDS] });
  const request = registry.object(PolicyRequestVariable, { name: 'Request' });
  schema = {
    objects: Object.fromEntries(registry.objects),
    variables: { object: cluster.name, environment: environment.name, organisation: organisation.name, request: request.name },
  };
  return schema;
}
