import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import type { OrganisationContext } from '../identity/organisation-context';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { orderBySql, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { emailObject, slugObject } from '../common/slug';
import type { UserEntity } from '../identity/user.entity';
import {
  AddMemberRequest,
  EmailResponse,
  OrganisationMemberResponse,
  OrganisationMembershipResponse,
  UpdateMemberRequest,
} from './dto/member.dto';
import { KubernetesRole, OrganisationMemberEntity } from '../identity/organisation-member.entity';
import { OrganisationRole } from '../common/organisation-roles';
import { OrganisationEntity } from '../identity/organisation.entity';

interface MemberRow {
  id: number;
  identity: string;
  role: OrganisationRole;
  kubernetes_role: KubernetesRole;
  joined_at: Date;
  user_identity: string;
  username: string;
  email: string;
}

const MEMBER_SORTABLE: Record<string, string> = {
  username: 'lower(u.username)',
  email: 'lower(u.email)',
  role: 'm.role',
  kubernetesRole: 'm.kubernetes_role',
  joinedAt: 'm.joined_at',
};

const MEMBERSHIP_SORTABLE: Record<string, string> = {
  name: 'lower(o.name)',
  slug: 'o.slug',
  role: 'm.role',
  joinedAt: 'm.joined_at',
};


@Injectable()
export class OrganisationMembersService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(OrganisationMemberEntity);
  }

  private toResponse(r: MemberRow): OrganisationMemberResponse {
    return {
      email: emailObject(r.email) as EmailResponse,
      identity: r.identity,
      joinedAt: new Date(r.joined_at).toISOString(),
      kubernetesRole: r.kubernetes_role,
      role: r.role,
      subject: r.user_identity,
      username: r.username,
    };
  }

  private async findRow(organisationId: number, where: string, value: unknown): Promise<MemberRow | null> {
    const rows: MemberRow[] = await this.txHost.tx.query(
      `SELECT m.id, m.identity, m.role, m.kubernetes_role, m.joined_at, u.identity AS user_identity, u.username, u.email
         FROM organisation_members m JOIN users u ON u.id = m.user_id
        WHERE m.organisation_id = $1 AND ${where}`,
      [organisationId, value],
    );
    return rows[0] ?? null;
  }

  /** The caller's own membership (404 for a platform administrator reading an organisation they are not in). */
  async me(ctx: OrganisationContext): Promise<OrganisationMemberResponse> {
    const row = ctx.member ? await this.findRow(ctx.organisation.id, 'm.id = $2', ctx.member.id) : null;
    if (!row) throw new NotFoundException(`You are not a member of organisation '${ctx.organisation.slug}'.`);
    return this.toResponse(row);
  }

  async list(organisationId: number, query: PageQueryDto): Promise<Page<OrganisationMemberResponse>> {
    const req = toPageRequest(query, MEMBER_SORTABLE);
    const rows: MemberRow[] = await this.txHost.tx.query(
      `SELECT m.id, m.identity, m.role, m.kubernetes_role, m.joined_at, u.identity AS user_identity, u.username, u.email
         FROM organisation_members m JOIN users u ON u.id = m.user_id
        WHERE m.organisation_id = $1
        ORDER BY ${orderBySql(req, MEMBER_SORTABLE, 'm.id')}
        OFFSET $2 LIMIT $3`,
      [organisationId, req.offset, req.size],
    );
    const [{ n }] = await this.txHost.tx.query(`SELECT count(*)::int AS n FROM organisation_members WHERE organisation_id = $1`, [
      organisationId,
    ]);
    return toPage(rows.map((r) => this.toResponse(r)), n, req, 'A');
  }

  /** Memberships of the calling user across organisations. */
  async memberships(user: UserEntity, query: PageQueryDto): Promise<Page<OrganisationMembershipResponse>> {
    const req = toPageRequest(query, MEMBERSHIP_SORTABLE);
    const rows: { identity: string; role: OrganisationRole; kubernetes_role: KubernetesRole; org_identity: string; name: string; slug: string }[] =
      await this.txHost.tx.query(
        `SELECT m.identity, m.role, m.kubernetes_role, o.identity AS org_identity, o.name, o.slug
           FROM organisation_members m JOIN organisations o ON o.id = m.organisation_id
          WHERE m.user_id = $1
          ORDER BY ${orderBySql(req, MEMBERSHIP_SORTABLE, 'm.id')}
          OFFSET $2 LIMIT $3`,
        [user.id, req.offset, req.size],
      );
    const [{ n }] = await this.txHost.tx.query(`SELECT count(*)::int AS n FROM organisation_members WHERE user_id = $1`, [user.id]);
    return toPage(
      rows.map((r) => ({
        email: emailObject(user.email) as EmailResponse,
        identity: user.identity,
        kubernetesRole: r.kubernetes_role,
        memberIdentity: r.identity,
        name: r.name,
        organisationIdentity: r.org_identity,
        role: r.role,
        slug: slugObject(r.slug),
      })),
      n,
      req,
      'A',
    );
  }

  /** Serialises membership changes of one organisation, so the last-OWNER rule holds under concurrency. */
  private async lockOrganisation(organisationId: number): Promise<OrganisationEntity> {
    const org = await this.txHost.tx
      .getRepository(OrganisationEntity)
      .findOne({ where: { id: organisationId }, lock: { mode: 'pessimistic_write' } });
    if (!org) throw new NotFoundException('The organisation no longer exists.');
    return org;
  }

  private async ownerCount(organisationId: number): Promise<number> {
    const [{ n }] = await this.txHost.tx.query(
      `SELECT count(*)::int AS n FROM organisation_members WHERE organisation_id = $1 AND role = 'OWNER'`,
      [organisationId],
    );
    return n;
  }

  private async memberOrFail(org: OrganisationEntity, memberIdentity: string): Promise<MemberRow> {
    const row = await this.findRow(org.id, 'm.identity = $2', memberIdentity);
    if (!row) throw new NotFoundException(`Organisation '${org.slug}' has no member with identity ${memberIdentity}.`);
    return row;
  }

  async add(ctx: OrganisationContext, req: AddMemberRequest): Promise<void> {
    if (!req.username && !req.email) {
      throw ValidationFailedException.forField('username', 'username or email is required to name the user to add');
    }
    const role = req.role ?? 'VIEWER';
    const kubernetesRole = req.kubernetesRole ?? 'VIEW';
    if (role === 'OWNER' && ctx.role !== 'OWNER') {
      throw new ForbiddenException('Only an OWNER may grant the OWNER role.');
    }
    const org = await this.lockOrganisation(ctx.organisation.id);
    const conditions: string[] = [];
    const params: string[] = [];
    if (req.username) {
      params.push(req.username);
      conditions.push(`lower(username) = lower($${params.length})`);
    }
    if (req.email) {
      params.push(req.email.email);
      conditions.push(`lower(email) = lower($${params.length})`);
    }
    const users: { id: number; identity: string; username: string }[] = await this.txHost.tx.query(
      `SELECT id, identity, username FROM users WHERE ${conditions.join(' AND ')}`,
      params,
    );
    const user = users[0];
    if (!user) {
      const what = [req.username && `username '${req.username}'`, req.email && `email '${req.email.email}'`].filter(Boolean).join(' and ');
      throw new NotFoundException(`No user with ${what} exists.`);
    }
    if (await this.repo.exists({ where: { organisationId: org.id, userId: user.id } })) {
      throw new ConflictException(`User '${user.username}' is already a member of organisation '${org.slug}'.`);
    }
    const member = await this.repo.save(
      this.repo.create({ organisationId: org.id, userId: user.id, role, kubernetesRole, joinedAt: this.clock.now() }),
    );
    const [{ identity }] = await this.txHost.tx.query(`SELECT identity FROM organisation_members WHERE id = $1`, [member.id]);
    this.audit.record({
      type: 'ORGANISATION_MEMBER_ADDED',
      organisation: { id: org.id, slug: org.slug },
      referencedEntityIdentity: identity,
      subject: `${user.username} to ${org.slug} as ${role}`,
      details: {
        username: { old: null, new: user.username },
        role: { old: null, new: role },
        kubernetesRole: { old: null, new: kubernetesRole },
      },
    });
  }

  async update(ctx: OrganisationContext, memberIdentity: string, req: UpdateMemberRequest): Promise<OrganisationMemberResponse> {
    const org = await this.lockOrganisation(ctx.organisation.id);
    const row = await this.memberOrFail(org, memberIdentity);
    const newRole = req.role ?? row.role;
    const newK8s = req.kubernetesRole ?? row.kubernetes_role;
    const changes = newRole !== row.role || newK8s !== row.kubernetes_role;
    if (((newRole === 'OWNER' && newRole !== row.role) || (row.role === 'OWNER' && changes)) && ctx.role !== 'OWNER') {
      throw new ForbiddenException('Only an OWNER may grant the OWNER role or change the membership of an OWNER.');
    }
    if (row.role === 'OWNER' && newRole !== 'OWNER' && (await this.ownerCount(org.id)) <= 1) {
      throw new ConflictException(`'${row.username}' is the last OWNER of organisation '${org.slug}'; make another member OWNER first.`);
    }
    const details: Record<string, { old: unknown; new: unknown }> = {};
    if (newRole !== row.role) details.role = { old: row.role, new: newRole };
    if (newK8s !== row.kubernetes_role) details.kubernetesRole = { old: row.kubernetes_role, new: newK8s };
    if (Object.keys(details).length) {
      await this.repo.update({ id: row.id }, { role: newRole, kubernetesRole: newK8s });
    }
    this.audit.record({
      type: 'ORGANISATION_MEMBER_UPDATED',
      organisation: { id: org.id, slug: org.slug },
      referencedEntityIdentity: row.identity,
      subject: `${row.username} in ${org.slug}`,
      details,
    });
    return this.toResponse({ ...row, role: newRole, kubernetes_role: newK8s });
  }

  async remove(ctx: OrganisationContext, memberIdentity: string): Promise<void> {
    const org = await this.lockOrganisation(ctx.organisation.id);
    const row = await this.memberOrFail(org, memberIdentity);
    if (row.role === 'OWNER') {
      if (ctx.role !== 'OWNER') throw new ForbiddenException('Only an OWNER may remove an OWNER.');
      if ((await this.ownerCount(org.id)) <= 1) {
        throw new ConflictException(`'${row.username}' is the last OWNER of organisation '${org.slug}' and cannot be removed.`);
      }
    }
    await this.repo.delete({ id: row.id });
    this.audit.record({
      type: 'ORGANISATION_MEMBER_REMOVED',
      organisation: { id: org.id, slug: org.slug },
      referencedEntityIdentity: row.identity,
      subject: `${row.username} from ${org.slug}`,
      details: {
        username: { old: row.username, new: null },
        role: { old: row.role, new: null },
        kubernetesRole: { old: row.kubernetes_role, new: null },
      },
    });
  }
}
