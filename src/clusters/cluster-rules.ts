import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import * as ipaddr from 'ipaddr.js';
import { ValidationFailedException } from '../common/errors';
import { dropUnknownValue } from '../common/field-validation.pipe';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { checkByonPool, isByon } from './byon/byon-rules';
import { catalogAddonName } from './addon-names';
import { ClusterCatalog } from './cluster-catalog';
import type { ClusterAddons } from './cluster.entity';
import type { CreateClusterNodePoolDto } from './dto/node-pool.dto';

const fail = (field: string, message: string) => ValidationFailedException.forField(field, message);

/** True when two CIDRs share at least one address. */
export function cidrsOverlap(a: string, b: string): boolean {
  const [na, la] = ipaddr.parseCIDR(a);
  const [nb, lb] = ipaddr.parseCIDR(b);
  if (na.kind() !== nb.kind()) return false;
  return na.match(nb, lb) || nb.match(na, la);
}

/** Field rules shared by cluster create/update and node pool operations (400 naming the field). */
@Injectable()
export class ClusterRules {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly catalog: ClusterCatalog,
  ) {}

  /** nodeSize, availabilityZone and minSize <= maxSize of one pool; `prefix` names it (e.g. `nodePools.1.`). */
  async checkPool(
    pool: CreateClusterNodePoolDto,
    providerType: string,
    region: string,
    prefix = '',
    cache?: { nodeTypes?: Map<string, unknown>; zones?: Set<string> },
  ): Promise<void> {
    if (isByon(providerType)) return checkByonPool(pool, prefix);
    const nodeTypes = cache?.nodeTypes ?? (await this.catalog.nodeTypes(providerType));
    if (!nodeTypes.has(pool.nodeSize)) {
      const known = [...nodeTypes.keys()];
      throw fail(
        `${prefix}nodeSize`,
        `${prefix}nodeSize '${pool.nodeSize}' is not a node type of provider ${providerType}${known.length ? `; use one of: ${known.join(', ')}` : ''}`,
      );
    }
    if (pool.availabilityZone !== undefined && pool.availabilityZone !== null) {
      let zones = cache?.zones;
      if (!zones) {
        const regionId = await this.catalog.regionIdOf(providerType, region);
        zones = regionId ? await this.catalog.zones(regionId) : new Set<string>();
      }
      if (!zones.has(pool.availabilityZone)) {
        throw fail(`${prefix}availabilityZone`, `${prefix}availabilityZone '${pool.availabilityZone}' is not a zone of region ${region}`);
      }
    }
    if (pool.minSize > pool.maxSize) {
      throw fail(`${prefix}minSize`, `${prefix}minSize (${pool.minSize}) must not be greater than maxSize (${pool.maxSize})`);
    }
  }

  /**
   * Add-on names must be the catalog's. Rewrites `addons` in place: the original Terraform provider's names
   * (see addon-names.ts) become the catalog's; an unknown add-on that is disabled is dropped the way unknown fields
   * are (a `Warning` header; 400 under `fieldValidation=Strict`), since leaving it out asks for the same; an unknown
   * add-on that is enabled is 400 naming the valid names.
   */
  async checkAddons(addons: ClusterAddons | Record<string, { enabled: boolean; customValues?: Record<string, string> }> | undefined): Promise<void> {
    if (!addons) return;
    const known = await this.catalog.addonNames();
    const map = addons as Record<string, { enabled: boolean; customValues?: Record<string, string> }>;
    for (const name of Object.keys(map)) {
      const canonical = catalogAddonName(name, known);
      if (canonical === name) continue;
      if (canonical !== null) {
        if (Object.hasOwn(map, canonical)) {
          throw fail(`addons.${name}`, `addons.${name} and addons.${canonical} name the same add-on; send one of them`);
        }
        map[canonical] = map[name];
        delete map[name];
        continue;
      }
      if (map[name].enabled === false && dropUnknownValue(`unknown add-on "${name}" (disabled) was dropped`)) {
        delete map[name];
        continue;
      }
      throw fail(`addons.${name}`, `addons.${name}: '${name}' is not an add-on; use one of: ${[...known].sort().join(', ')}`);
    }
  }

  async maintenanceScheduleId(org: OrganisationEntity, identity: string, field = 'maintenanceScheduleIdentity'): Promise<number> {
    const [row] = await this.txHost.tx.query(`SELECT id FROM maintenance_schedules WHERE identity = $1 AND organisation_id = $2`, [identity, org.id]);
    if (!row) throw fail(field, `${field}: no maintenance schedule ${identity} in organisation '${org.slug}'`);
    return Number(row.id);
  }

  async updateChannel(name: string): Promise<void> {
    const ch = await this.catalog.updateChannel(name);
    if (!ch) throw fail('updateChannel', `updateChannel '${name}' does not exist`);
    if (!ch.available) throw fail('updateChannel', `updateChannel '${name}' is not available`);
  }
}
