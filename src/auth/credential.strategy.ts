import { Injectable, UnauthorizedException } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { retryReadOnce } from '../database/read-retry';
import { hashToken, OrganisationPrefetch, TokensService, UNKNOWN_TOKEN_MESSAGE } from '../tokens/tokens.service';
import { UsersService } from '../users/users.service';
import { OidcVerifier } from './oidc-verifier.service';
import { PrincipalCache } from './principal-cache';
import type { Principal } from '../identity/principal';

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * The one strategy for the Authorization header, called by the global guard:
 * `Token <pat>`, `Bearer <pat>` and `Bearer <jwt>` (OIDC).
 *
 * Its statements run before the handler on every request, writes included, and none of them is the request's
 * change: each runs once more on a fresh connection when its connection was lost (retryReadOnce), as a GET does.
 */
@Injectable()
export class CredentialStrategy {
  constructor(
    private readonly tokens: TokensService,
    private readonly oidc: OidcVerifier,
    private readonly users: UsersService,
    private readonly cache: PrincipalCache,
  ) {}

  async validate(req: FastifyRequest): Promise<Principal> {
    const header = req.headers.authorization;
    if (!header) throw new UnauthorizedException('Authentication required: send Authorization: Token <personal access token> or Bearer <token>.');
    const match = /^(Token|Bearer)\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new UnauthorizedException('The Authorization header must be "Token <pat>" or "Bearer <token>".');
    const scheme = match[1].toLowerCase();
    const credential = match[2];
    if (scheme === 'bearer' && JWT_SHAPE.test(credential)) {
      const claims = await this.oidc.verify(credential);
      // Find-or-create: a second run finds the user the first one may have created (INSERT ... ON CONFLICT DO NOTHING).
      const user = await retryReadOnce(() => this.users.findOrCreateFromOidc(claims), 'authentication (OIDC user)');
      return { user, kind: 'oidc' };
    }
    const params = (req.params ?? {}) as Record<string, string | undefined>;
    const organisationSlug = params.organisationSlug ?? params.organizationSlug;
    const tokenHash = hashToken(credential);
    // A hit needs no database statement; a miss reads the token, its user and the path's organisation in one.
    let facts = this.cache.get(tokenHash, organisationSlug);
    if (!facts) {
      const version = this.cache.currentVersion;
      const read = await retryReadOnce(() => this.tokens.lookup(tokenHash, organisationSlug), 'authentication (token lookup)');
      if (!read) throw new UnauthorizedException(UNKNOWN_TOKEN_MESSAGE);
      facts = this.cache.store(tokenHash, read, organisationSlug, version);
    }
    // Revocation, expiry (by the clock) and the IP restriction (for this request's address): on every request.
    // Its one statement stamps the last use when older than a minute: run twice, the second changes nothing.
    await retryReadOnce(() => this.tokens.accept(facts, req.ip), 'authentication (token last use)');
    const { user, token, organisation } = this.cache.detach(facts);
    // Handed to the organisation access guard so the membership is resolved with the credential.
    if (organisation) (req as FastifyRequest & { organisationPrefetch?: OrganisationPrefetch }).organisationPrefetch = organisation;
    return { user, token, kind: 'pat' };
  }
}
