/**
 * JSON maps may use any key, including names of Object.prototype members (`constructor`, `toString`,
 * `valueOf`, `hasOwnProperty`...). class-transformer skips such keys when it copies a plain object and
 * fails outright on `constructor`, which lost data silently or answered 500. Before a body is transformed,
 * such keys are renamed with a marker no JSON key of a sane client starts with; after validation they get
 * their names back. `__proto__` never gets here: the JSON parser refuses it.
 */
const MARK = '\u0000';

function isPrototypeName(key: string): boolean {
  return key in Object.prototype;
}

function walk(value: unknown, rename: (key: string) => string | null): void {
  const stack = [value];
  const seen = new Set<object>();
  while (stack.length) {
    const current = stack.pop();
    if (!current || typeof current !== 'object' || seen.has(current)) continue;
    seen.add(current);
    if (Array.isArray(current)) {
      for (const item of current) stack.push(item);
      continue;
    }
    const record = current as Record<string, unknown>;
    const keys = Object.keys(record);
    if (keys.some((k) => rename(k) !== null)) {
      // Rebuilt in the original order, so maps keep the order they were sent in.
      const entries = keys.map((k) => [rename(k) ?? k, record[k]] as const);
      for (const k of keys) delete record[k];
      for (const [k, v] of entries) Object.defineProperty(record, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    for (const k of Object.keys(record)) stack.push(record[k]);
  }
}

/** Renames keys that are Object.prototype member names, in place, at every depth. */
export function escapePrototypeKeys(value: unknown): void {
  walk(value, (k) => (isPrototypeName(k) ? MARK + k : null));
}

/** Gives escaped keys their names back, in place, at every depth. */
export function restorePrototypeKeys(value: unknown): void {
  walk(value, (k) => (k.startsWith(MARK) ? k.slice(MARK.length) : null));
}

/** A field path or message with escaped keys shown by their real names. */
export function unescapeKeys(text: string): string {
  return text.split(MARK).join('');
}
