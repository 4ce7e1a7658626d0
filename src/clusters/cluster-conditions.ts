/**
 * Kubernetes-style conditions of clusters and node pools (docs/adr/0150-generations-bumped-by-the-database.md): Ready,
 * Reconciling and Degraded, each with status, reason, message, lastTransitionTime and the generation it was set for.
 * The database keeps them in `conditions` (jsonb): a generation bump sets Reconciling (trigger
 * cms_spec_changed_conditions), the reconciler sets them from what the driver reports (`setConditions`). Pure functions.
 */

export const CONDITION_TYPES = ['Ready', 'Reconciling', 'Degraded'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

export interface Condition {
  type: ConditionType;
  status: ConditionStatus;
  /** CamelCase, machine-readable. */
  reason: string;
  /** For people. */
  message: string;
  /** ISO 8601: when `status` last changed. */
  lastTransitionTime: string;
  /** The generation the condition was set for. */
  observedGeneration: number;
}

/** A condition to set: its lastTransitionTime and observedGeneration come from `setConditions`. */
export type ConditionChange = Pick<Condition, 'type' | 'status' | 'reason' | 'message'>;

/** Sets `changes` in `current` (as cms_set_conditions does in SQL): a condition whose status stays keeps its lastTransitionTime. */
export function setConditions(current: readonly Condition[] | null | undefined, changes: readonly ConditionChange[], at: Date, generation: number): Condition[] {
  const out = [...(current ?? [])];
  for (const ch of changes) {
    const i = out.findIndex((c) => c.type === ch.type);
    const old = i >= 0 ? out[i] : undefined;
    const next: Condition = {
      ...ch,
      lastTransitionTime: old && old.status === ch.status ? old.lastTransitionTime : at.toISOString(),
      observedGeneration: generation,
    };
    if (i >= 0) out[i] = next;
    else out.push(next);
  }
  return out;
}

/** What the row holds, in the order Ready, Reconciling, Degraded; a type the row lacks is derived from the generations. */
export function conditionsView(
  stored: readonly Condition[] | null | undefined,
  generation: number,
  observedGeneration: number | null,
  since: Date | string,
): Condition[] {
  const at = new Date(since).toISOString();
  const applied = observedGeneration !== null && observedGeneration >= generation;
  const fallback: Record<ConditionType, Condition> = {
    Ready: {
      type: 'Ready',
      status: applied ? 'True' : 'False',
      reason: applied ? 'Applied' : 'Reconciling',
      message: applied ? `Generation ${generation} is applied` : `Generation ${generation} is not applied yet`,
      lastTransitionTime: at,
      observedGeneration: generation,
    },
    Reconciling: {
      type: 'Reconciling',
      status: applied ? 'False' : 'True',
      reason: applied ? 'Applied' : 'SpecChanged',
      message: applied ? `Generation ${generation} is applied` : `Generation ${generation} is waiting to be applied by the cluster driver`,
      lastTransitionTime: at,
      observedGeneration: generation,
    },
    Degraded: { type: 'Degraded', status: 'False', reason: 'NoError', message: '', lastTransitionTime: at, observedGeneration: generation },
  };
  return CONDITION_TYPES.map((type) => {
    const c = (stored ?? []).find((s) => s.type === type);
    return c
      ? {
          type,
          status: c.status,
          reason: c.reason,
          message: c.message,
          lastTransitionTime: c.lastTransitionTime,
          observedGeneration: Number(c.observedGeneration),
        }
      : fallback[type];
  });
}
