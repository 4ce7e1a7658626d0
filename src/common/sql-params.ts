/** Binds one value into a statement being built and answers its placeholder (`$n`). */
export type Bind = (value: unknown) => string;

/** One part of a statement built from parts (e.g. a row's INSERT), numbering its placeholders with the statement's binder. */
export type SqlPart = (bind: Bind) => string;

/**
 * The values of one statement built from parts, and their binder: parts written by different modules (e.g. the
 * audit row, its activity event and its webhook event in one statement) number their placeholders without knowing
 * about each other.
 */
export function sqlParams(): { values: unknown[]; bind: Bind } {
  const values: unknown[] = [];
  return {
    values,
    bind: (value) => {
      values.push(value);
      return `$${values.length}`;
    },
  };
}
