/**
 * Environment types (docs/conventions.md, "Environments"), in the order the types lists answer them.
 * Shared: the environments module validates `type` against this list.
 */
export const ENVIRONMENT_TYPES = ['production', 'staging', 'development', 'demo', 'other'] as const;
export type EnvironmentType = (typeof ENVIRONMENT_TYPES)[number];
