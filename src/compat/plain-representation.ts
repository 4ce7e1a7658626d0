/**
 * The plain representation of a response: what the original Go client and Terraform provider decode. It differs
 * from the interface's in three ways only, all found from the response schemas of the OpenAPI document:
 * - a Slug object `{slugValue}` is its plain string;
 * - an Email object `{email}` is its plain string;
 * - a sort of page form B (an array of sort orders) is form A (`{empty, sorted, unsorted}`), in the page and in
 *   its `pageable`, so every page is form A.
 *
 * From a schema this module derives two things: a mapper that turns a response object of that schema into the
 * plain representation (applied at the edge, before serialisation), and the plain schema itself (for the document
 * of operations that always answer plainly). Both work on objects and schemas, not on serialised text, so they do
 * not care how a route serialises its answer.
 */

/** An OpenAPI 3 schema object, as far as this module reads it. */
export interface SchemaObject {
  $ref?: string;
  type?: string;
  properties?: Record<string, SchemaObject>;
  items?: SchemaObject;
  additionalProperties?: SchemaObject | boolean;
  allOf?: SchemaObject[];
  oneOf?: SchemaObject[];
  anyOf?: SchemaObject[];
  nullable?: boolean;
  required?: string[];
  [key: string]: unknown;
}

/** Turns a value of a schema into its plain representation; returns the value itself when nothing changes. */
export type PlainMapper = (value: unknown) => unknown;

type PlainKind = 'slug' | 'email';

const SORT_FORM_A: SchemaObject = {
  type: 'object',
  description: 'Sort in page form A',
  properties: { empty: { type: 'boolean' }, sorted: { type: 'boolean' }, unsorted: { type: 'boolean' } },
  required: ['empty', 'sorted', 'unsorted'],
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

/** Sort form B as a value: an array of sort orders. Form A is an object. */
function toSortFormA(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return { empty: value.length === 0, sorted: value.length > 0, unsorted: value.length === 0 };
}

const slugToString: PlainMapper = (v) => (isRecord(v) && typeof v.slugValue === 'string' ? v.slugValue : v);
const emailToString: PlainMapper = (v) => (isRecord(v) && typeof v.email === 'string' ? v.email : v);

/** Applies each mapper in turn (the parts of an `allOf` describe disjoint properties of one object). */
function chain(mappers: PlainMapper[]): PlainMapper | null {
  if (mappers.length === 0) return null;
  if (mappers.length === 1) return mappers[0];
  return (v) => mappers.reduce((acc, m) => m(acc), v);
}

/** Maps the named properties of an object, copying it only when one of them changes (answers may be shared). */
function objectMapper(props: [string, PlainMapper][]): PlainMapper {
  return (v) => {
    if (!isRecord(v)) return v;
    let out: Record<string, unknown> = v;
    for (const [key, map] of props) {
      if (!Object.hasOwn(v, key)) continue;
      const next = map(v[key]);
      if (next !== v[key]) {
        if (out === v) out = { ...v };
        out[key] = next;
      }
    }
    return out;
  };
}

function arrayMapper(item: PlainMapper): PlainMapper {
  return (v) => {
    if (!Array.isArray(v)) return v;
    let changed = false;
    const out = v.map((x) => {
      const y = item(x);
      if (y !== x) changed = true;
      return y;
    });
    return changed ? out : v;
  };
}

function mapValues(item: PlainMapper): PlainMapper {
  return (v) => {
    if (!isRecord(v)) return v;
    let out: Record<string, unknown> = v;
    for (const [k, x] of Object.entries(v)) {
      const y = item(x);
      if (y !== x) {
        if (out === v) out = { ...v };
        out[k] = y;
      }
    }
    return out;
  };
}

/** Plain mappers and plain schemas of the schemas of one OpenAPI document. */
export class PlainRepresentation {
  private readonly mappers = new Map<string, PlainMapper | null>();
  private readonly compiling = new Set<string>();

  constructor(private readonly schemas: Record<string, SchemaObject>) {}

  /** Slug and Email objects by shape: an object whose only property is `slugValue` (or `email`), a string. */
  kindOf(schema: SchemaObject | undefined): PlainKind | null {
    const props = schema?.properties;
    if (!props) return null;
    const keys = Object.keys(props);
    if (keys.length !== 1 || props[keys[0]].type !== 'string') return null;
    return keys[0] === 'slugValue' ? 'slug' : keys[0] === 'email' ? 'email' : null;
  }

  private resolve(schema: SchemaObject | undefined): SchemaObject | undefined {
    return schema?.$ref ? this.schemas[refName(schema.$ref)] : schema;
  }

  /** A `sort` of form B: an array of sort orders (objects with `property` and `direction`). */
  private isSortFormB(schema: SchemaObject | undefined): boolean {
    const s = this.resolve(schema);
    if (s?.type !== 'array') return false;
    const item = this.resolve(s.items);
    return !!item?.properties?.property && !!item.properties.direction;
  }

  /** The mapper of a schema, or null when its values are already plain. */
  mapperOf(schema: SchemaObject | undefined): PlainMapper | null {
    if (!schema) return null;
    if (schema.$ref) return this.mapperOfComponent(refName(schema.$ref));
    const kind = this.kindOf(schema);
    if (kind) return kind === 'slug' ? slugToString : emailToString;
    const parts: PlainMapper[] = [];
    for (const sub of [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]) {
      const m = this.mapperOf(sub);
      if (m) parts.push(m);
    }
    if (schema.items) {
      const m = this.mapperOf(schema.items);
      if (m) parts.push(arrayMapper(m));
    }
    if (schema.properties) {
      const props: [string, PlainMapper][] = [];
      for (const [key, prop] of Object.entries(schema.properties)) {
        const m = key === 'sort' && this.isSortFormB(prop) ? toSortFormA : this.mapperOf(prop);
        if (m) props.push([key, m]);
      }
      if (props.length) parts.push(objectMapper(props));
    }
    if (typeof schema.additionalProperties === 'object') {
      const m = this.mapperOf(schema.additionalProperties);
      if (m) parts.push(mapValues(m));
    }
    return chain(parts);
  }

  private mapperOfComponent(name: string): PlainMapper | null {
    if (this.mappers.has(name)) return this.mappers.get(name)!;
    // A schema that refers to itself (directly or through others): the inner reference is resolved at run time.
    if (this.compiling.has(name)) return (v) => (this.mappers.get(name) ?? ((x: unknown) => x))(v);
    this.compiling.add(name);
    const m = this.mapperOf(this.schemas[name]);
    this.compiling.delete(name);
    this.mappers.set(name, m);
    return m;
  }

  /**
   * The plain schema of `schema`: Slug and Email objects as strings, sorts in form A. Components that change are
   * derived once as `<Name>Plain` into `derived`; a schema that does not change is returned as it is.
   */
  plainSchemaOf(schema: SchemaObject, derived: Record<string, SchemaObject>): SchemaObject {
    if (!this.mapperOf(schema)) return schema;
    if (schema.$ref) {
      const name = refName(schema.$ref);
      // Slug and Email become string schemas in place, not components of their own.
      if (this.kindOf(this.schemas[name])) return this.plainSchemaOf({ ...this.schemas[name], ...(schema.nullable ? { nullable: true } : {}) }, derived);
      const plainName = `${name}Plain`;
      if (!derived[plainName]) {
        derived[plainName] = {}; // placeholder for self-references
        Object.assign(derived[plainName], this.plainSchemaOf(this.schemas[name], derived));
      }
      return { $ref: `#/components/schemas/${plainName}` };
    }
    const kind = this.kindOf(schema);
    if (kind) {
      const inner = schema.properties![kind === 'slug' ? 'slugValue' : 'email'];
      return {
        ...inner,
        type: 'string',
        description: kind === 'slug' ? 'The slug as a plain string' : 'The address as a plain string',
        ...(schema.nullable ? { nullable: true } : {}),
      };
    }
    const out: SchemaObject = { ...schema };
    for (const key of ['allOf', 'oneOf', 'anyOf'] as const) {
      if (schema[key]) out[key] = schema[key]!.map((s) => this.plainSchemaOf(s, derived));
    }
    if (schema.items) out.items = this.plainSchemaOf(schema.items, derived);
    if (schema.properties) {
      out.properties = Object.fromEntries(
        Object.entries(schema.properties).map(([key, prop]) => [
          key,
          key === 'sort' && this.isSortFormB(prop) ? SORT_FORM_A : this.plainSchemaOf(prop, derived),
        ]),
      );
    }
    if (typeof schema.additionalProperties === 'object') out.additionalProperties = this.plainSchemaOf(schema.additionalProperties, derived);
    // `allOf: [{$ref: Slug}]` (a nullable reference) becomes a string; keep it a plain string schema.
    if (out.allOf?.length === 1 && !out.properties && out.allOf[0].type === 'string') {
      const { allOf, ...rest } = out;
      return { ...rest, ...allOf[0] };
    }
    return out;
  }
}
