import { ValidateBy, ValidationOptions } from 'class-validator';

/**
 * Length bounds shared by request DTOs of several modules.
 * An ISO 8601 date-time is about 30 characters even with a fractional second and an offset
 * (2026-11-23T10:00:00.123456+01:00); 64 leaves room without letting a client send megabytes.
 */
export const MAX_DATE_TIME_LENGTH = 64;

/** A flat object of string values with bounded size: at most `maxEntries` keys of 1..`maxKey` characters, values up to `maxValue`. */
export function IsBoundedStringMap(maxEntries: number, maxKey: number, maxValue: number, options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isBoundedStringMap',
      constraints: [maxEntries, maxKey, maxValue],
      validator: {
        validate: (value: unknown) =>
          !!value &&
          typeof value === 'object' &&
          !Array.isArray(value) &&
          Object.keys(value).length <= maxEntries &&
          Object.entries(value).every(([k, v]) => k.length >= 1 && k.length <= maxKey && typeof v === 'string' && v.length <= maxValue),
        defaultMessage: (args) =>
          `${args?.property} must be an object of at most ${maxEntries} string values (keys 1 to ${maxKey} characters, values at most ${maxValue})`,
      },
    },
    options,
  );
}

/** The OpenAPI schema of an IsBoundedStringMap property. */
export function boundedStringMapSchema(maxEntries: number, maxValue: number) {
  return { type: 'object', additionalProperties: { type: 'string', maxLength: maxValue }, maxProperties: maxEntries } as const;
}
