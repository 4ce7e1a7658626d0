import type { DataSource, EntityTarget, ObjectLiteral } from 'typeorm';

/**
 * Builds an entity from a `to_jsonb(row)` value (snake_case keys, timestamps as strings) or a plain result row
 * (`RETURNING *`, `SELECT t.*`: pg has parsed the values already), using the entity's column metadata, for the
 * few hot queries that fetch several tables, or write and read, in one statement.
 */
export function jsonRowToEntity<T extends ObjectLiteral>(ds: DataSource, target: EntityTarget<T>, json: Record<string, unknown>): T {
  const meta = ds.getMetadata(target);
  const entity = meta.create() as T;
  for (const column of meta.columns) {
    const raw = json[column.databaseName];
    if (raw === undefined) continue;
    let value: unknown = raw;
    if (raw !== null && (column.type === 'timestamptz' || column.type === 'timestamp' || column.type === Date)) value = new Date(raw as string);
    else if (raw !== null && column.type === 'bigint') value = Number(raw);
    (entity as Record<string, unknown>)[column.propertyName] = value;
  }
  return entity;
}
