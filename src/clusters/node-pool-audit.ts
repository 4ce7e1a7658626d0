import type { AuditDetails } from '../audit/audit-event.entity';
import type { AuditEntry } from '../audit/audit-recorder';
import type { OrganisationEntity } from '../identity/organisation.entity';
import type { EnvironmentRef } from './cluster-read';
import type { ClusterNodePoolEntity } from './cluster-node-pool.entity';

/** The audit entry of a change to one node pool (its cluster, environment and organisation named). */
export function nodePoolAuditEntry(
  type: string,
  org: Pick<OrganisationEntity, 'id' | 'slug'>,
  env: EnvironmentRef,
  cluster: { id: number; slug: string },
  pool: Pick<ClusterNodePoolEntity, 'id' | 'name' | 'identity'>,
  details: AuditDetails,
): AuditEntry {
  return {
    type,
    organisation: { id: org.id, slug: org.slug },
    environment: { id: env.id, slug: env.slug },
    cluster: { id: cluster.id, slug: cluster.slug },
    nodePool: { id: Number(pool.id), name: pool.name },
    referencedEntityIdentity: pool.identity,
    subject: `${pool.name} of cluster ${env.slug}/${cluster.slug}`,
    details,
  };
}
