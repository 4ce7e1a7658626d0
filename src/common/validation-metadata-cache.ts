import { getMetadataStorage } from 'class-validator';

/**
 * class-validator resolves a class's validation rules on every validate() call by testing every registered class for
 * being an ancestor (`MetadataStorage.getTargetValidationMetadatas`, O(number of decorated classes); upstream issue
 * typestack/class-validator#2686). It was a top self-time frame of a GET in the bench profile, for a query DTO with
 * two optional flags. The rules of a class are complete once the class and its ancestors are loaded, before anything
 * validates an instance of it (classes loaded later register their own rules only), so the answer is memoised per
 * class and argument tuple. Installed once, when the validation pipe's module loads.
 */
type Lookup = (target: Function, schema: string, always: boolean, strictGroups: boolean, groups?: string[]) => unknown[];

const INSTALLED = Symbol.for('cms.validationMetadataCache');

export function installValidationMetadataCache(): void {
  const storage = getMetadataStorage() as unknown as { getTargetValidationMetadatas: Lookup; [INSTALLED]?: true };
  if (storage[INSTALLED]) return;
  const original = storage.getTargetValidationMetadatas.bind(storage);
  const byTarget = new WeakMap<Function, Map<string, unknown[]>>();
  storage.getTargetValidationMetadatas = (target, schema, always, strictGroups, groups) => {
    if (typeof target !== 'function') return original(target, schema, always, strictGroups, groups);
    let cached = byTarget.get(target);
    if (!cached) byTarget.set(target, (cached = new Map()));
    const key = `${schema}\u0000${always}\u0000${strictGroups}\u0000${groups ? groups.join('\u0001') : '-'}`;
    let found = cached.get(key);
    if (!found) cached.set(key, (found = original(target, schema, always, strictGroups, groups)));
    return found;
  };
  storage[INSTALLED] = true;
}
