import { Injectable, Logger, UnauthorizedException } from '@nestjs/common';
import { createRemoteJWKSet, errors as joseErrors, JWTPayload, jwtVerify } from 'jose';
import { AppConfig } from '../config/app-config';

/** Verifies OIDC bearer tokens against the issuer's JWKS (discovered or configured). */
@Injectable()
export class OidcVerifier {
  private readonly logger = new Logger(OidcVerifier.name);
  private jwks?: ReturnType<typeof createRemoteJWKSet>;

  constructor(private readonly config: AppConfig) {}

  get enabled(): boolean {
    return !!this.config.OIDC_ISSUER_URL;
  }

  private async keySet(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (this.jwks) return this.jwks;
    let jwksUrl = this.config.OIDC_JWKS_URL;
    if (!jwksUrl) {
      const issuer = this.config.OIDC_ISSUER_URL!.replace(/\/$/, '');
      const res = await fetch(`${issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(5000) });
      if (!res.ok) throw new Error(`OIDC discovery answered ${res.status}`);
      const doc = (await res.json()) as { jwks_uri?: string };
      if (!doc.jwks_uri) throw new Error('OIDC discovery document has no jwks_uri');
      jwksUrl = doc.jwks_uri;
    }
    this.jwks = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30000 });
    return this.jwks;
  }

  async verify(jwt: string): Promise<JWTPayload & { sub: string }> {
    if (!this.enabled) throw new UnauthorizedException('OIDC bearer tokens are not accepted: no OIDC issuer is configured.');
    let keys: ReturnType<typeof createRemoteJWKSet>;
    try {
      keys = await this.keySet();
    } catch (e) {
      this.logger.error(`Cannot load the OIDC key set: ${(e as Error).message}`);
      throw new UnauthorizedException('The OIDC token cannot be verified right now: the issuer key set is unreachable.');
    }
    try {
      const { payload } = await jwtVerify(jwt, keys, {
        issuer: this.config.OIDC_ISSUER_URL,
        audience: this.config.OIDC_AUDIENCE,
        clockTolerance: 30,
      });
      if (!payload.sub) throw new UnauthorizedException('The OIDC token has no subject.');
      return payload as JWTPayload & { sub: string };
    } catch (e) {
      if (e instanceof UnauthorizedException) throw e;
      if (e instanceof joseErrors.JWTExpired) throw new UnauthorizedException('The OIDC token has expired.');
      if (e instanceof joseErrors.JWTClaimValidationFailed)
        throw new UnauthorizedException(`The OIDC token was refused: claim '${e.claim}' is not valid (${e.reason}).`);
      throw new UnauthorizedException('The OIDC token was refused: its signature or format is not valid.');
    }
  }
}
