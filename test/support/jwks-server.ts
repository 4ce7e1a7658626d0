import * as http from 'http';
import { exportJWK, generateKeyPair, JWK, SignJWT } from 'jose';

type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
import type { AddressInfo } from 'net';

/** A local OIDC issuer: discovery document + JWKS, and a signer for test tokens. */
export class TestIssuer {
  private server?: http.Server;
  private privateKey!: SigningKey;
  private jwk!: JWK;
  url = '';

  async start(): Promise<void> {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    this.privateKey = privateKey;
    this.jwk = { ...(await exportJWK(publicKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
    this.server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/.well-known/openid-configuration') {
        res.end(JSON.stringify({ issuer: this.url, jwks_uri: `${this.url}/jwks` }));
      } else if (req.url === '/jwks') {
        res.end(JSON.stringify({ keys: [this.jwk] }));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  /**
   * A signed token with `iss`, `aud`, `iat` (now, or `issuedAt` in epoch seconds; `null` leaves `iat` out) and `exp`
   * (in 5 min, or `expiresIn`; `null` leaves `exp` out); `notBefore` (epoch seconds) adds `nbf`.
   */
  async sign(
    claims: Record<string, unknown>,
    opts: { audience?: string; expiresIn?: string | number | null; issuer?: string; key?: SigningKey; issuedAt?: number | null; notBefore?: number } = {},
  ): Promise<string> {
    const jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'test-key' })
      .setIssuer(opts.issuer ?? this.url)
      .setAudience(opts.audience ?? 'cms-api');
    if (opts.issuedAt !== null) jwt.setIssuedAt(opts.issuedAt);
    if (opts.expiresIn !== null) jwt.setExpirationTime(opts.expiresIn ?? '5m');
    if (opts.notBefore !== undefined) jwt.setNotBefore(opts.notBefore);
    return jwt.sign(opts.key ?? this.privateKey);
  }

  async stop(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
