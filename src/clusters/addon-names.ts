/**
 * How the add-on names of the original Terraform provider map onto this catalog's names.
 *
 * The provider sends its whole default add-on map on every cluster create and update, in camelCase
 * (`certManager`, `ingressController`, ...). A camelCase spelling of a catalog name is that add-on; the names
 * below differ in wording and stand for the add-on that does the same job here. The provider's other names
 * (e.g. `fluxOperator`, `sealedSecrets`, `gpu`) have no counterpart in the catalog.
 */
export const ORIGINAL_ADDON_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  defaultNetworkPolicies: 'network-policy',
  kured: 'node-reboots',
  monitoring: 'observability-agent',
});

/** `cert-manager` -> `certManager`. */
export function camelCaseAddonName(name: string): string {
  return name.replace(/[-_.]+([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** The catalog name `name` stands for (itself when known), or null when it names no add-on of `known`. */
export function catalogAddonName(name: string, known: ReadonlySet<string>): string | null {
  if (known.has(name)) return name;
  const aliased = Object.hasOwn(ORIGINAL_ADDON_ALIASES, name) ? ORIGINAL_ADDON_ALIASES[name] : undefined;
  if (aliased && known.has(aliased)) return aliased;
  for (const k of known) if (camelCaseAddonName(k) === name) return k;
  return null;
}
