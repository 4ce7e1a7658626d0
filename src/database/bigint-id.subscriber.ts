import { EntitySubscriberInterface, EventSubscriber, InsertEvent } from 'typeorm';

/**
 * TypeORM writes a generated bigint primary key back onto the saved object as a string, while
 * rows read back carry numbers (see data-source-options). A second save() of the same object
 * would then not recognise the row. This turns the written-back id into a number.
 */
@EventSubscriber()
export class BigintIdSubscriber implements EntitySubscriberInterface {
  afterInsert(event: InsertEvent<Record<string, unknown>>): void {
    const entity = event.entity;
    if (!entity) return;
    for (const column of event.metadata.primaryColumns) {
      const value = entity[column.propertyName];
      if (column.type === 'bigint' && typeof value === 'string' && /^\d+$/.test(value)) {
        entity[column.propertyName] = Number(value);
      }
    }
  }
}
