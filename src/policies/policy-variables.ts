import { ApiProperty } from '@nestjs/swagger';
import { ClusterResponse } from '../clusters/dto/cluster.dto';
import { NodePoolResponse } from '../clusters/dto/node-pool.dto';
import { EnvironmentResponse } from '../environments/dto/environment.dto';
import { OrganisationResponse } from '../organisations/dto/organisation.dto';

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

export type FieldShape =
  | { kind: 'string' | 'bool' | 'int' | 'double' | 'dyn' | 'stringMap' | 'dynMap' }
  | { kind: 'object'; type: ObjectShape }
  | { kind: 'list'; element: FieldShape };

export interface ObjectShape {
  name: string;
  fields: Record<string, { shape: FieldShape; nullable: boolean }>;
  /** The class CEL values of this type are instances of (plain objects are not typed values). */
  ctor: new (v: Record<string, unknown>) => object;
}

const MODEL_PROPERTIES = 'swagger/apiModelProperties';
const MODEL_PROPERTIES_ARRAY = 'swagger/apiModelPropertiesArray';
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

interface SwaggerMeta {
  type?: unknown;
  isArray?: boolean;
  nullable?: boolean;
  additionalProperties?: { type?: string } | boolean;
  required?: boolean;
}

function propertiesOf(cls: Function): string[] {
  return ((Reflect.getMetadata(MODEL_PROPERTIES_ARRAY, cls.prototype) as string[] | undefined) ?? []).map((p) => p.replace(/^:/, ''));
}

function metaOf(cls: Function, prop: string): SwaggerMeta {
  return (Reflect.getMetadata(MODEL_PROPERTIES, cls.prototype, prop) as SwaggerMeta | undefined) ?? {};
}

const isModel = (t: unknown): t is Function => typeof t === 'function' && propertiesOf(t).length > 0;

/** The shapes of every class seen, by name: each CEL type is registered once. */
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
    const ctor = { [name]: class { constructor(v: Record<string, unknown>) { Object.assign(this, v); } } }[name];
    const shape: ObjectShape = { name, fields: {}, ctor };
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
    if (t === String || t === 'string') return { kind: 'string' };
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
      return { kind: 'object', type: this.object(t) };
    }
    return { kind: 'dyn' };
  }
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

export interface PolicyVariableShapes {
  registry: ShapeRegistry;
  cluster: ObjectShape;
  environment: ObjectShape;
  organisation: ObjectShape;
  request: ObjectShape;
}

/** The shapes of the five variables, built once from the DTO metadata. */
export function policyVariableShapes(): PolicyVariableShapes {
  const registry = new ShapeRegistry();
  const pool = registry.object(NodePoolResponse);
  const cluster = registry.object(ClusterResponse, {
    name: 'Cluster',
    omit: ['actualState'],
    extra: { nodePools: { shape: { kind: 'list', element: { kind: 'object', type: pool } }, nullable: false } },
  });
  const environment = registry.object(EnvironmentResponse, { name: 'Environment', pick: [...ENVIRONMENT_VARIABLE_FIELDS] });
  const organisation = registry.object(OrganisationResponse, { name: 'Organisation', pick: [...ORGANISATION_VARIABLE_FIELDS] });
  const request = registry.object(PolicyRequestVariable, { name: 'Request' });
  return { registry, cluster, environment, organisation, request };
}

/** The CEL type name of a field (nullable fields are `dyn`). */
export function celTypeName(shape: FieldShape, nullable = false): string {
  if (nullable) return 'dyn';
  switch (shape.kind) {
    case 'object':
      return shape.type.name;
    case 'list':
      return `list<${celTypeName(shape.element)}>`;
    case 'stringMap':
      return 'map<string, string>';
    case 'dynMap':
      return 'map<string, dyn>';
    default:
      return shape.kind;
  }
}

/**
 * Converts a JSON value to the CEL value of its shape: ints become BigInt, objects instances of their type.
 * `only` (a projection) limits the top-level fields converted; the others are left unset.
 */
export function toCelValue(shape: FieldShape, value: unknown, only: ReadonlySet<string> | null = null): unknown {
  if (value === null || value === undefined) return null;
  switch (shape.kind) {
    case 'int':
      return typeof value === 'number' && Number.isInteger(value) ? BigInt(value) : value;
    case 'object': {
      const out: Record<string, unknown> = {};
      const v = value as Record<string, unknown>;
      for (const [k, f] of Object.entries(shape.type.fields)) if (!only || only.has(k)) out[k] = toCelValue(f.shape, v[k]);
      return new shape.type.ctor(out);
    }
    case 'list':
      return (value as unknown[]).map((e) => toCelValue(shape.element, e));
    default:
      return value;
  }
}
