import { ValidationFailedException } from '../../common/errors';
import type { ClusterEntity } from '../cluster.entity';
import type { CreateClusterNodePoolDto } from '../dto/node-pool.dto';

/**
 * Rules of bring-your-own-node (BYON) clusters, kept apart from the cloud rules they replace
 * (docs/adr/0069-bring-your-own-node-clusters.md):
 * - the cloud account needs no credentials and the catalog has no regions for the provider: `region` is the
 *   customer's own location label (a slug such as `amsterdam-dc2`);
 * - node pools have no cloud node type: `nodeSize` (and `availabilityZone`, when given) are free labels;
 * - the control plane is all the platform provisions: the simulated driver does not wait for worker nodes.
 */
export const BYON_PROVIDER = 'byon';

export const isByon = (providerType: string | null | undefined): boolean => providerType === BYON_PROVIDER;

/** A BYON location label: lowercase letters, digits and dashes, 1-63 characters, no dash at either end. */
export const LOCATION_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** A BYON node size label (describes the customer's machines): also dots and underscores, up to 100 characters. */
export const NODE_SIZE_LABEL = /^[a-z0-9]([a-z0-9._-]{0,98}[a-z0-9])?$/;

const fail = (field: string, message: string) => ValidationFailedException.forField(field, message);

export function checkByonRegion(region: string): void {
  if (!LOCATION_LABEL.test(region)) {
    throw fail(
      'region',
      `region '${region}' is not a valid location label for a bring-your-own-node cluster; use lowercase letters, digits and dashes (1-63 characters, e.g. 'amsterdam-dc2')`,
    );
  }
}

export function checkByonPool(pool: CreateClusterNodePoolDto, prefix = ''): void {
  if (!NODE_SIZE_LABEL.test(pool.nodeSize)) {
    throw fail(
      `${prefix}nodeSize`,
      `${prefix}nodeSize '${pool.nodeSize}' is not a valid label for bring-your-own nodes; use lowercase letters, digits, '.', '_' and '-' (e.g. 'bare-metal-32c')`,
    );
  }
  if (pool.availabilityZone !== undefined && pool.availabilityZone !== null && !LOCATION_LABEL.test(pool.availabilityZone)) {
    throw fail(`${prefix}availabilityZone`, `${prefix}availabilityZone '${pool.availabilityZone}' is not a valid location label (lowercase letters, digits and dashes)`);
  }
  if (pool.minSize > pool.maxSize) {
    throw fail(`${prefix}minSize`, `${prefix}minSize (${pool.minSize}) must not be greater than maxSize (${pool.maxSize})`);
  }
}

/**
 * Steps the simulated driver completes at once for a BYON cluster: everything after the control plane
 * exists. There are no cloud machines to wait for; the customer's nodes join whenever they run the join command.
 */
const BYON_IMMEDIATE_STEPS = new Set(['INITIAL_NODE_POOLS_PROVISIONED', 'INITIAL_ADDONS_PROVISIONED', 'DONE', 'provisioned', 'starting', 'started']);

export function byonStepIsImmediate(cluster: Pick<ClusterEntity, 'cloudProvider'>, step: string): boolean {
  return isByon(cluster.cloudProvider) && BYON_IMMEDIATE_STEPS.has(step);
}
