/**
 * What a cluster holds (ADR 0171): a cluster holds what it references (its environment, its maintenance schedule)
 * until its deletion is requested. A deletion cannot be taken back, and it needs none
 * of these, so a cluster in `deleting` (or with `deleting` requested) no longer holds them: they can be deleted at
 * once, as a `terraform destroy` does right after the cluster's. The one exception is the cloud account, which the
 * deletion uses to remove the cluster's cloud resources: it stays held until 24 hours after the cluster is deleted
 * (the interface's rule, src/cloud-accounts).
 *
 * The SQL condition, on the `clusters` table (optionally through an alias), for "this cluster holds what it references".
 */
export function clusterHolds(alias?: string): string {
  const p = alias ? `${alias}.` : '';
  return `(${p}deleted_at IS NULL AND ${p}status NOT IN ('deleting', 'deleted') AND ${p}desired_status IS DISTINCT FROM 'deleting')`;
}
