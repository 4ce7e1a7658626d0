import type { ValidationOptions } from 'class-validator';
import { IsBoundedStringMap } from '../../common/bounds';

export const MAX_METADATA_ENTRIES = 50;
export const MAX_METADATA_KEY = 128;
export const MAX_METADATA_VALUE = 1024;

/** Swagger schema of a string-to-string map. */
/** The metadata map of a request: as STRING_MAP_SCHEMA, empty when left out. */
export const REQUEST_STRING_MAP_SCHEMA = () => ({ ...STRING_MAP_SCHEMA, default: {} });

export const STRING_MAP_SCHEMA = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: MAX_METADATA_VALUE },
  maxProperties: MAX_METADATA_ENTRIES,
  example: { team: 'platform', costCenter: '4711' },
  description: `String to string map: at most ${MAX_METADATA_ENTRIES} entries, keys 1..${MAX_METADATA_KEY} and values up to ${MAX_METADATA_VALUE} characters`,
} as const;

/** A plain object whose values are all strings, within the metadata bounds. */
export function IsStringMap(options?: ValidationOptions) {
  return IsBoundedStringMap(MAX_METADATA_ENTRIES, MAX_METADATA_KEY, MAX_METADATA_VALUE, options);
}
