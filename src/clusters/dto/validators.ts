import { IsBoundedStringMap } from '../../common/bounds';
import { Transform } from 'class-transformer';
import { ValidateBy, ValidationOptions } from 'class-validator';
import { isValidCidr } from '../../common/network';

/** A CIDR (IPv4 or IPv6), checked with ipaddr.js. */
export function IsCidr(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isCidr',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && isValidCidr(value),
        defaultMessage: (args) => `${args?.property} must be a CIDR such as 10.0.0.0/16`,
      },
    },
    options,
  );
}

/** A flat JSON object of string values (labels, annotations), bounded in size: keys up to 253 characters (a Kubernetes label key), values up to 4096. */
export function IsStringMap(maxEntries = 100, options?: ValidationOptions) {
  return IsBoundedStringMap(maxEntries, 253, 4096, options);
}

/** The add-on map: name -> {enabled: boolean, customValues?: {string: string}}. Names are checked against the catalog by the service. */
export function IsAddonMap(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isAddonMap',
      validator: {
        validate: (value: unknown) =>
          !!value &&
          typeof value === 'object' &&
          !Array.isArray(value) &&
          Object.keys(value).length <= 100 &&
          Object.values(value).every((v) => {
            if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
            const { enabled, customValues, ...rest } = v as Record<string, unknown>;
            if (Object.keys(rest).length) return false;
            if (typeof enabled !== 'boolean') return false;
            if (customValues === undefined || customValues === null) return true;
            return (
              typeof customValues === 'object' &&
              !Array.isArray(customValues) &&
              Object.keys(customValues).length <= 100 &&
              Object.values(customValues).every((x) => typeof x === 'string' && x.length <= 4096)
            );
          }),
        defaultMessage: (args) => `${args?.property} must map add-on names to {enabled: boolean, customValues?: object of at most 100 strings (each at most 4096 characters)}`,
      },
    },
    options,
  );
}

/** Query booleans: "true"/"false" (anything else is left for @IsBoolean to refuse). */
export { QueryBoolean } from '../../common/query-boolean';
