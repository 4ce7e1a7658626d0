import { ValidateBy, ValidationOptions } from 'class-validator';

export const MAX_METADATA_ENTRIES = 50;
export const MAX_METADATA_KEY = 128;
export const MAX_METADATA_VALUE = 1024;

/** Swagger schema of a string-to-string map. */
export const STRING_MAP_SCHEMA = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: MAX_METADATA_VALUE },
  maxProperties: MAX_METADATA_ENTRIES,
  example: { team: 'platform', costCenter: '4711' },
  description: `String to string map: at most ${MAX_METADATA_ENTRIES} entries, keys 1..${MAX_METADATA_KEY} and values up to ${MAX_METADATA_VALUE} characters`,
} as const;

/** A plain object whose values are all strings, within the metadata bounds. */
export function IsStringMap(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isStringMap',
      validator: {
        validate(value: unknown): boolean {
          if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
          const entries = Object.entries(value as Record<string, unknown>);
          if (entries.length > MAX_METADATA_ENTRIES) return false;
          return entries.every(
            ([k, v]) => k.length >= 1 && k.length <= MAX_METADATA_KEY && typeof v === 'string' && v.length <= MAX_METADATA_VALUE,
          );
        },
        defaultMessage: (args) =>
          `${args?.property ?? 'metadata'} must be an object mapping strings to strings (at most ${MAX_METADATA_ENTRIES} entries, keys 1..${MAX_METADATA_KEY} and values up to ${MAX_METADATA_VALUE} characters)`,
      },
    },
    options,
  );
}
