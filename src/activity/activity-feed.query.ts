import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { applyOrder, orderByEntries, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { ActivityEventEntity } from './activity-event.entity';
import { ActivityEventResponse } from './dto/activity-event.dto';

const SORTABLE: Record<string, string> = { createdAt: 'a.createdAt', type: 'a.type' };

/** Read side of the activity feed (ActivityService is the write side). */
@Injectable()
export class ActivityFeedQuery {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async page(organisationId: number, query: PageQueryDto): Promise<Page<ActivityEventResponse>> {
    const req = toPageRequest(query, SORTABLE, [{ property: 'createdAt', direction: 'DESC' }]);
    const qb = this.txHost.tx
      .getRepository(ActivityEventEntity)
      .createQueryBuilder('a')
      .where('a.organisationId = :org', { org: organisationId });
    applyOrder(qb, orderByEntries(req, SORTABLE, 'a.id', req.sort[0]?.direction ?? 'DESC'));
    const [rows, total] = await qb.offset(req.offset).limit(req.size).getManyAndCount();
    return toPage(
      rows.map((a) => ({
        createdAt: a.createdAt.toISOString(),
        message: a.message,
        type: a.type,
        actor: { identity: a.actorIdentity, username: a.actorUsername },
      })),
      total,
      req,
      'A',
    );
  }
}
