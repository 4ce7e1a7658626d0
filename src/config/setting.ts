import { getMetadataStorage, IS_BOOLEAN, IS_IN, IS_INT, IS_URL, MAX, MIN } from 'class-validator';

/**
 * What a person needs to know about one configuration variable, next to the class-validator decorators that
 * enforce it. Bounds are not written here: they are read from those decorators (settingsOf), so the table in
 * docs/configuration.md (npm run docs:config) cannot disagree with validation.
 */
export interface SettingDoc {
  /** What the variable does, in a sentence or two (Markdown). */
  meaning: string;
  /** The default in words, where it is not a constant of the class (computed at start, or unset with a meaning). */
  defaultText?: string;
}

export interface SettingFacts extends SettingDoc {
  name: string;
  /** The default as the table shows it. */
  defaultShown: string;
  /** The values validation accepts, in words, from the Min/Max/IsInt/IsIn/IsBoolean/IsUrl decorators. */
  allowed: string;
}

const declared = new Map<object, { name: string; doc: SettingDoc }[]>();

/** Declares a configuration variable's meaning (and a default in words where the class has no constant). */
export function Setting(doc: SettingDoc): PropertyDecorator {
  return (target, property) => {
    const list = declared.get(target.constructor) ?? [];
    list.push({ name: String(property), doc });
    declared.set(target.constructor, list);
  };
}

/** Every declared setting of a configuration class, in declaration order, with its default and bounds. */
export function settingsOf(configClass: new () => object): SettingFacts[] {
  const defaults = new configClass() as Record<string, unknown>;
  const rules = getMetadataStorage().getTargetValidationMetadatas(configClass, '', true, false);
  const list = declared.get(configClass) ?? [];
  const undeclared = Object.keys(defaults).filter((name) => !list.some((s) => s.name === name));
  if (undeclared.length) throw new Error(`configuration variables without @Setting: ${undeclared.join(', ')}`);
  return list.map(({ name, doc }) => {
    const rule = (validator: string) => rules.find((r) => r.propertyName === name && r.name === validator);
    const constraint = (validator: string) => rule(validator)?.constraints;
    return {
      name,
      ...doc,
      defaultShown: doc.defaultText ?? shownDefault(defaults[name]),
      allowed: allowedValues({
        integer: !!rule(IS_INT),
        boolean: !!rule(IS_BOOLEAN),
        url: !!rule(IS_URL),
        min: constraint(MIN)?.[0] as number | undefined,
        max: constraint(MAX)?.[0] as number | undefined,
        oneOf: constraint(IS_IN)?.[0] as unknown[] | undefined,
      }),
    };
  });
}

function shownDefault(value: unknown): string {
  if (value === undefined) return 'unset';
  if (value === '') return '(empty)';
  return `\`${String(value)}\``;
}

function allowedValues(c: { integer: boolean; boolean: boolean; url: boolean; min?: number; max?: number; oneOf?: unknown[] }): string {
  if (c.boolean) return '`true` or `false`';
  if (c.oneOf) return `one of ${c.oneOf.map((v) => `\`${String(v)}\``).join(', ')}`;
  if (c.url) return 'an http(s) URL';
  const kind = c.integer ? 'integer' : c.min !== undefined || c.max !== undefined ? 'number' : '';
  if (c.min !== undefined && c.max !== undefined) return `${kind} ${c.min}..${c.max}`;
  if (c.min !== undefined) return `${kind} ≥ ${c.min}`;
  if (c.max !== undefined) return `${kind} ≤ ${c.max}`;
  return kind;
}
