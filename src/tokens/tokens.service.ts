import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { createHash, randomBytes } from 'crypto';
import { DataSource } from 'typeorm';
import { AuditRecorder } from '../audit/audit-recorder';
import { Clock } from '../common/clock';
import { ValidationFailedException } from '../common/errors';
import { addressAllowed, parseAddressList } from '../config/address-list';
import { AppConfig } from '../config/app-config';
import { jsonRowToEntity } from '../database/json-row';
import { OrganisationMemberEntity } from '../identity/organisation-member.entity';
import { OrganisationEntity } from '../identity/organisation.entity';
import { UserEntity } from '../identity/user.entity';
import { ProvisionPersonalAccessTokenRequest, PersonalAccessTokenResponse } from './dto/personal-access-token.dto';
import { PersonalAccessTokenEntity } from '../identity/personal-access-token.entity';

const DAY_MS = 24 * 60 * 60 * 1000;
const LAST_USED_THROTTLE_MS = 60 * 1000;
export const TOKEN_PREFIX = 'cms_';

/** The organisation named in the request path and the caller's membership, looked up with the credential. */
export interface OrganisationPrefetch {
  slug: string;
  organisation: OrganisationEntity | null;
  member: OrganisationMemberEntity | null;
}

/** What authentication decides from: the token, its user, and the organisation named in the path with the caller's membership. */
export interface TokenFacts {
  user: UserEntity;
  token: PersonalAccessTokenEntity;
  organisation?: OrganisationPrefetch;
}

export const UNKNOWN_TOKEN_MESSAGE = 'The personal access token is not valid.';

/**
 * Records a token's use. The one write to personal_access_tokens that changes nothing authentication decides
 * from, so neither the database triggers nor the principal cache treat it as a change.
 */
export const TOUCH_LAST_USED_SQL = `UPDATE personal_access_tokens SET last_used_at = $2
          WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $2::timestamptz - interval '1 minute')`;

export const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');
export const generateToken = () => TOKEN_PREFIX + randomBytes(32).toString('base64url');

@Injectable()
export class TokensService {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly audit: AuditRecorder,
  ) {}

  private get repo() {
    return this.txHost.tx.getRepository(PersonalAccessTokenEntity);
  }

  toResponse(t: PersonalAccessTokenEntity, owner: UserEntity, token: string | null = null): PersonalAccessTokenResponse {
    const now = this.clock.now();
    return {
      active: !t.revokedAt && t.expireAt > now,
      createdAt: t.createdAt.toISOString(),
      expireAt: t.expireAt.toISOString(),
      id: t.identity,
      ipRestriction: t.ipRestriction,
      lastUsedAt: t.lastUsedAt ? t.lastUsedAt.toISOString() : null,
      name: t.name,
      subject: owner.identity,
      token,
      type: { name: t.type },
    };
  }

  async list(owner: UserEntity): Promise<PersonalAccessTokenResponse[]> {
    const rows = await this.repo.find({ where: { userId: owner.id }, order: { createdAt: 'DESC', id: 'DESC' } });
    return rows.map((t) => this.toResponse(t, owner));
  }

  /** Creates a token for `owner`; the clear value is returned once and only its hash is stored. */
  async provision(
    owner: UserEntity,
    req: ProvisionPersonalAccessTokenRequest,
    options: { token?: string; audit?: boolean } = {},
  ): Promise<PersonalAccessTokenResponse> {
    const now = this.clock.now();
    let expireAt = new Date(now.getTime() + this.config.PAT_DEFAULT_TTL_DAYS * DAY_MS);
    if (req.expireAt) {
      expireAt = new Date(req.expireAt);
      if (expireAt <= now) throw ValidationFailedException.forField('expireAt', 'expireAt must be in the future');
      if (expireAt.getTime() > now.getTime() + 366 * DAY_MS)
        throw ValidationFailedException.forField('expireAt', 'expireAt must be at most one year ahead');
    }
    const ipRestriction = req.ipRestriction?.trim() || null;
    if (ipRestriction) {
      const { invalid, ranges } = parseAddressList(ipRestriction);
      if (invalid || ranges.length === 0)
        throw ValidationFailedException.forField(
          'ipRestriction',
          `ipRestriction must be a comma-separated list of IP addresses or CIDR ranges; '${invalid ?? ipRestriction}' is not one`,
        );
    }
    const token = options.token ?? generateToken();
    const entity = this.repo.create({
      userId: owner.id,
      name: req.name ?? 'Personal access token',
      tokenHash: hashToken(token),
      type: req.type?.name ?? 'FULL_ACCESS',
      ipRestriction,
      expireAt,
      revokedAt: null,
      lastUsedAt: null,
      createdAt: now,
    });
    const saved = await this.repo.save(entity);
    if (options.audit !== false) {
      this.audit.record({
        type: 'PERSONAL_ACCESS_TOKEN_PROVISIONED',
        referencedEntityIdentity: saved.identity,
        subject: saved.name,
        details: {
          name: { old: null, new: saved.name },
          type: { old: null, new: saved.type },
          ipRestriction: { old: null, new: saved.ipRestriction },
          expireAt: { old: null, new: saved.expireAt.toISOString() },
          token: { old: null, new: '[redacted]' },
        },
      });
    }
    return this.toResponse(saved, owner, token);
  }

  async revoke(owner: UserEntity, identity: string): Promise<{ message: string; status: number }> {
    const token = await this.repo.findOne({ where: { identity, userId: owner.id } });
    if (!token) throw new NotFoundException(`Personal access token ${identity} not found.`);
    if (token.revokedAt) return { message: 'Personal access token was already revoked', status: 200 };
    token.revokedAt = this.clock.now();
    await this.repo.save(token);
    this.audit.record({
      type: 'PERSONAL_ACCESS_TOKEN_REVOKED',
      referencedEntityIdentity: token.identity,
      subject: token.name,
      details: { active: { old: true, new: false } },
    });
    return { message: 'Personal access token revoked', status: 200 };
  }

  /**
   * What authentication decides from, for the token with this hash: the token, its user and, when the path names
   * an organisation, that organisation and the caller's membership of it, in one statement. Null for an unknown
   * token. Only reads: whether the token may be used now is `accept`'s to say (the principal cache keeps what
   * this answers and asks `accept` again on every request).
   */
  async lookup(tokenHash: string, organisationSlug?: string): Promise<TokenFacts | null> {
    const rows: (PersonalAccessTokenEntity & { u_json: UserEntity })[] = await this.dataSource.query(
      `SELECT t.id, t.identity, t.user_id AS "userId", t.name, t.type, t.ip_restriction AS "ipRestriction",
              t.expire_at AS "expireAt", t.revoked_at AS "revokedAt", t.last_used_at AS "lastUsedAt", t.created_at AS "createdAt",
              json_build_object('id', u.id, 'identity', u.identity, 'username', u.username, 'email', u.email,
                'oidcId', u.oidc_id, 'canCreateOrganisations', u.can_create_organisations,
                'platformAdmin', u.platform_admin, 'createdAt', u.created_at, 'modifiedAt', u.modified_at) AS u_json,
              to_jsonb(o) AS o_json, to_jsonb(m) AS m_json
         FROM personal_access_tokens t JOIN users u ON u.id = t.user_id
         -- The organisation named in the path and the caller's membership, fetched in the same round trip.
         LEFT JOIN organisations o ON o.slug = $2
         LEFT JOIN organisation_members m ON m.organisation_id = o.id AND m.user_id = u.id
        WHERE t.token_hash = $1`,
      [tokenHash, organisationSlug ?? null],
    );
    const row = rows[0];
    if (!row) return null;
    const { u_json, o_json, m_json, ...tokenFields } = row as typeof row & { o_json: unknown; m_json: unknown };
    const user = Object.assign(new UserEntity(), u_json, {
      createdAt: new Date(u_json.createdAt),
      modifiedAt: new Date(u_json.modifiedAt),
    });
    const token = Object.assign(new PersonalAccessTokenEntity(), tokenFields);
    if (organisationSlug === undefined) return { user, token };
    return {
      user,
      token,
      organisation: {
        slug: organisationSlug,
        organisation: o_json ? jsonRowToEntity(this.dataSource, OrganisationEntity, o_json as Record<string, unknown>) : null,
        member: m_json ? jsonRowToEntity(this.dataSource, OrganisationMemberEntity, m_json as Record<string, unknown>) : null,
      },
    };
  }

  /**
   * Refuses revoked, expired (by the injectable clock) and out-of-range use (against the client address of this
   * request), and records the use at most once a minute (setting `facts.token.lastUsedAt`, so a cached token
   * knows too).
   */
  async accept(facts: TokenFacts, clientIp: string | undefined): Promise<void> {
    const token = facts.token;
    const now = this.clock.now();
    if (token.revokedAt) throw new UnauthorizedException('The personal access token has been revoked.');
    if (new Date(token.expireAt) <= now) throw new UnauthorizedException('The personal access token has expired.');
    if (token.ipRestriction && !addressAllowed(clientIp, token.ipRestriction))
      throw new UnauthorizedException('The personal access token may not be used from this address.');
    if (!token.lastUsedAt || now.getTime() - new Date(token.lastUsedAt).getTime() >= LAST_USED_THROTTLE_MS) {
      // At most one write a minute per token, and never inside the request's own transaction.
      await this.dataSource.query(TOUCH_LAST_USED_SQL, [token.id, now]);
      token.lastUsedAt = now;
    }
  }
}
