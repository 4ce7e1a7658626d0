import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException } from '@nestjs/common';
import { EnvironmentEntity } from '../environments/environment.entity';
import type { OrganisationEntity } from '../identity/organisation.entity';
import { clusterInEnvironment, ClusterRow, EnvironmentRef } from './cluster-read';

/** Finds environments and clusters named in a path, inside the caller's organisation (404 otherwise). */
@Injectable()
export class ClusterLookup {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async environment(org: OrganisationEntity, environmentSlug: string): Promise<EnvironmentEntity> {
    const env = await this.txHost.tx
      .getRepository(EnvironmentEntity)
      .createQueryBuilder('e')
      .where('e.organisation_id = :org AND e.slug = :slug AND e.deleted_at IS NULL', { org: org.id, slug: environmentSlug })
      .getOne();
    if (!env) throw new NotFoundException(`Environment '${environmentSlug}' was not found in organisation '${org.slug}'.`);
    return env;
  }

  /** The non-deleted cluster; `lock` takes the row lock for a change (inside the request transaction). */
  async cluster(
    org: OrganisationEntity,
    environmentSlug: string,
    clusterSlug: string,
    lock = false,
  ): Promise<{ environment: EnvironmentRef; cluster: ClusterRow }> {
    const found = await clusterInEnvironment((text, params) => this.txHost.tx.query(text, params), org.id, environmentSlug, clusterSlug, lock);
    if (!found.environment) throw new NotFoundException(`Environment '${environmentSlug}' was not found in organisation '${org.slug}'.`);
    if (!found.cluster) {
      throw new NotFoundException(`Cluster '${clusterSlug}' was not found in environment '${environmentSlug}' of organisation '${org.slug}'.`);
    }
    return { environment: found.environment, cluster: found.cluster };
  }
}
