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
        // Always set when an issuer is (loadConfig refuses an issuer without an audience).
        audience: this.config.OIDC_AUDIENCE,
        requiredClaims: ['exp'],
        clockTolerance: OIDC_CLOCK_SKEW_SECONDS,
      });
      // jose checks `nbf` and `exp` against the tolerance, and `iat` only with a maximum token age: a token issued
      // in the future (an issuer's clock far ahead, or a token minted to be valid later) is refused here.
      if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + OIDC_CLOCK_SKEW_SECONDS) {
        throw new UnauthorizedException(
          `The OIDC token was refused: claim 'iat' (issued at) is more than ${OIDC_CLOCK_SKEW_SECONDS} s in the future.`,
        );
      }
      // A token valid for years is a credential for years once leaked: its lifetime is bounded.
      const max = this.config.OIDC_MAX_TOKEN_LIFETIME_SECONDS;
      const hasIat = typeof payload.iat === 'number';
      const lifetime = payload.exp! - (hasIat ? payload.iat! : Math.floor(Date.now() / 1000));
      if (lifetime > max) {
        throw new UnauthorizedException(
          `The OIDC token was refused: it is valid for ${lifetime} s (${hasIat ? "'exp' - 'iat'" : "'exp' - now, as it has no 'iat'"}), longer than the ` +
            `${max} s this service accepts (OIDC_MAX_TOKEN_LIFETIME_SECONDS); ask the issuer for shorter-lived tokens.`,
        );
      }
      if (!payload.sub) throw new UnauthorizedException('The OIDC token has no subject.');
      return payload as JWTPayload & { sub: string };
    } catch (e) {
      if (e instanceof UnauthorizedException) throw e;
      if (e instanceof joseErrors.JWTExpired) throw new UnauthorizedException('The OIDC token has expired.');
      if (e instanceof joseErrors.JWTClaimValidationFailed) throw new UnauthorizedException(claimRefusal(e));
      throw new UnauthorizedException('The OIDC token was refused: its signature or format is not valid.');
    }
  }
}

/** Largest difference allowed between the issuer's clock and this server's for `iat`, `nbf` and `exp`. */
export const OIDC_CLOCK_SKEW_SECONDS = 60;

const CLAIM_NAMES: Record<string, string> = { exp: 'expiry', nbf: 'not before', iat: 'issued at', aud: 'audience', iss: 'issuer' };

function claimRefusal(e: InstanceType<typeof joseErrors.JWTClaimValidationFailed>): string {
  const name = CLAIM_NAMES[e.claim] ? `'${e.claim}' (${CLAIM_NAMES[e.claim]})` : `'${e.claim}'`;
  if (e.reason === 'missing') return `The OIDC token was refused: it has no claim ${name}; tokens must carry it.`;
  if (e.claim === 'nbf') return `The OIDC token was refused: claim ${name} is more than ${OIDC_CLOCK_SKEW_SECONDS} s in the future.`;
  return `The OIDC token was refused: claim ${name} is not valid (${e.reason}).`;
}
