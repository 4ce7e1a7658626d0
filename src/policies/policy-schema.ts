/**
 * The types of the policy variables as plain data: built on the main thread from the read models' OpenAPI
 * metadata (policy-variables.ts) and handed to the executor's worker threads, which declare them to the CEL engine
 * without loading the DTO classes (and Nest, Swagger and TypeORM with them).
 */

export type FieldShape =
  /** `max`: the longest value when the metadata bounds it (an enum, a uuid, a date-time). */
  | { kind: 'string'; max?: number }
  | { kind: 'bool' | 'int' | 'double' | 'dyn' | 'stringMap' | 'dynMap' }
  /** An object type, by name (PolicyVariableSchema.objects). */
  | { kind: 'object'; type: string }
  | { kind: 'list'; element: FieldShape };

export interface ObjectShape {
  name: string;
  fields: Record<string, { shape: FieldShape; nullable: boolean }>;
}

export interface PolicyVariableSchema {
  /** Every object type, by name. */
  objects: Record<string, ObjectShape>;
  /** The object type of each variable (`oldObject` has the type of `object`). */
  variables: { object: string; environment: string; organisation: string; request: string };
}

/** The CEL type name of a field (nullable fields are `dyn`). */
export function celTypeName(shape: FieldShape, nullable = false): string {
  if (nullable) return 'dyn';
  switch (shape.kind) {
    case 'object':
      return shape.type;
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

/** What the service shares with the executor's worker threads for policies (Executor.shareWithWorkers). */
export interface PolicySchemaShare {
  schema: PolicyVariableSchema;
  /** The run-time budget of one evaluation, in cost units. */
  runtimeCostLimit: number;
}
