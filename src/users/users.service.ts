import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ConflictException, Injectable } from '@nestjs/common';
import type { JWTPayload } from 'jose';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { applyOrder, orderByEntries, Page, PageQueryDto, toPage, toPageRequest } from '../common/paging';
import { AddUserRequest, UserResponse, UserSearchResult } from './dto/user.dto';
import { UserEntity } from '../identity/user.entity';

@Injectable()
export class UsersService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly clock: Clock,
    private readonly audit: AuditRecorder,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(UserEntity);
  }

  toResponse(u: UserEntity): UserResponse {
    return {
      canCreateOrganisations: u.canCreateOrganisations,
      createdAt: u.createdAt.toISOString(),
      email: u.email,
      identity: u.identity,
      oidcId: u.oidcId,
      username: u.username,
    };
  }

  findByUsernameOrEmail(username?: string, email?: string): Promise<UserEntity | null> {
    const qb = this.repo.createQueryBuilder('u');
    if (username) qb.orWhere('lower(u.username) = lower(:username)', { username });
    if (email) qb.orWhere('lower(u.email) = lower(:email)', { email });
    return qb.getOne();
  }

  async add(req: AddUserRequest): Promise<UserEntity> {
    const clash = await this.repo
      .createQueryBuilder('u')
      .where(
        'lower(u.username) = lower(:username) OR lower(u.email) = lower(:email) OR (CAST(:oidcId AS text) IS NOT NULL AND u.oidc_id = :oidcId)',
        { username: req.username, email: req.email, oidcId: req.oidcId ?? null },
      )
      .getOne();
    if (clash) {
      const what =
        clash.username.toLowerCase() === req.username.toLowerCase()
          ? `username '${req.username}'`
          : clash.email.toLowerCase() === req.email.toLowerCase()
            ? `email '${req.email}'`
            : `oidcId '${req.oidcId}'`;
      throw new ConflictException(`A user with ${what} already exists.`);
    }
    const now = this.clock.now();
    const user = await this.repo.save(
      this.repo.create({
        username: req.username,
        email: req.email,
        oidcId: req.oidcId ?? null,
        canCreateOrganisations: req.canCreateOrganisations ?? false,
        platformAdmin: req.platformAdmin ?? false,
        createdAt: now,
        modifiedAt: now,
      }),
    );
    this.audit.record({
      type: 'USER_ADDED',
      referencedEntityIdentity: user.identity,
      subject: user.username,
      details: {
        username: { old: null, new: user.username },
        email: { old: null, new: user.email },
        canCreateOrganisations: { old: null, new: user.canCreateOrganisations },
        platformAdmin: { old: null, new: user.platformAdmin },
      },
    });
    return user;
  }

  /**
   * Prefix search, at most one page. Prefixes match only users sharing an organisation with the caller;
   * others are found by exact username or email; platform administrators see everyone.
   */
  async search(query: { username: string } & PageQueryDto, caller: UserEntity): Promise<Page<UserSearchResult>> {
    const sortable = { username: 'u.username', email: 'u.email' };
    const req = toPageRequest(query, sortable, [{ property: 'username', direction: 'ASC' }]);
    const exact = query.username.toLowerCase();
    const pattern = exact.replace(/[\\%_]/g, (c) => `\\${c}`) + '%';
    const qb = this.repo
      .createQueryBuilder('u')
      .where(
        `(lower(u.username) LIKE :pattern AND (:everyone OR u.id = :caller OR EXISTS (
            SELECT 1 FROM organisation_members mine JOIN organisation_members theirs ON theirs.organisation_id = mine.organisation_id
             WHERE mine.user_id = :caller AND theirs.user_id = u.id)))
         OR lower(u.username) = :exact OR lower(u.email) = :exact`,
        { pattern, exact, caller: caller.id, everyone: caller.platformAdmin === true },
      )
      .offset(req.offset)
      .limit(req.size);
    applyOrder(qb, orderByEntries(req, sortable, 'u.id'));
    const [rows, total] = await qb.getManyAndCount();
    return toPage(rows.map((u) => ({ email: u.email, username: u.username })), total, req, 'A');
  }

  /** The first valid OIDC token of an unknown subject creates its user. */
  async findOrCreateFromOidc(claims: JWTPayload & { sub: string }): Promise<UserEntity> {
    const existing = await this.repo.findOne({ where: { oidcId: claims.sub } });
    if (existing) return existing;
    // An address the issuer has not verified could claim someone else's: only a verified one is taken.
    const email = typeof claims.email === 'string' && claims.email_verified === true ? claims.email : `${claims.sub}@oidc.invalid`;
    const preferred =
      (typeof claims.preferred_username === 'string' && claims.preferred_username) ||
      (email.includes('@') ? email.split('@')[0] : claims.sub);
    const base = preferred.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 56) || 'user';
    const now = this.clock.now();
    for (let attempt = 0; attempt < 5; attempt++) {
      const username = attempt === 0 ? base : `${base}-${Math.random().toString(36).slice(2, 7)}`;
      const rows = await this.repo.query(
        `INSERT INTO users (username, email, oidc_id, created_at, modified_at)
         VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT DO NOTHING RETURNING id`,
        [username, attempt === 0 ? email : `${claims.sub}+${attempt}@oidc.invalid`, claims.sub, now],
      );
      const again = await this.repo.findOne({ where: { oidcId: claims.sub } });
      if (again) return again;
      if (rows.length) break;
    }
    throw new ConflictException('Could not create a user for this OIDC subject: username and email are taken.');
  }

  count(): Promise<number> {
    return this.repo.count();
  }
}
