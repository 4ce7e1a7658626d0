const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True when `value` is a UUID in its canonical text form. Lookups by identity check this first, so a value
 * that is not one answers 404 instead of reaching PostgreSQL's uuid cast.
 */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID.test(value);
