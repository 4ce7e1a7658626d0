import { Injectable } from '@nestjs/common';
import { createCipheriv, createDecipheriv, randomBytes } from 'crypto';
import { AppConfig, decodeKey } from '../config/app-config';

const VERSION = 'v1';

/**
 * Encrypts secrets at rest with AES-256-GCM (Node's crypto; no extra dependency needed).
 * Envelope: "v1.<iv>.<tag>.<ciphertext>", each part base64url. The key comes from
 * CREDENTIALS_ENCRYPTION_KEY (or DATA_DIR/credentials.key with the embedded database). While a key is rotated, the keys
 * of CREDENTIALS_ENCRYPTION_KEY_PREVIOUS still open what they sealed (GCM's tag tells which key sealed a value); only
 * the current key seals (docs/operations.md, "Rotating the credentials encryption key").
 */
@Injectable()
export class SecretBox {
  private readonly key: Buffer;
  private readonly previous: Buffer[];

  constructor(config: AppConfig) {
    const raw = config.CREDENTIALS_ENCRYPTION_KEY;
    if (!raw) throw new Error('CREDENTIALS_ENCRYPTION_KEY is not set');
    this.key = decodeKey(raw);
    if (this.key.length !== 32) throw new Error('CREDENTIALS_ENCRYPTION_KEY must be 32 bytes');
    this.previous = config.previousEncryptionKeys.map(decodeKey);
    if (this.previous.some((k) => k.length !== 32)) throw new Error('CREDENTIALS_ENCRYPTION_KEY_PREVIOUS must be keys of 32 bytes');
  }

  /** `context` (e.g. a row identity) is bound as associated data, so a ciphertext cannot be moved to another row. */
  seal(plaintext: string, context = ''): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  open(envelope: string, context = ''): string {
    return this.openWith(envelope, context).plaintext;
  }

  /** Whether `envelope` was sealed with the current key (false: with a previous one). Throws when no key opens it. */
  sealedWithCurrentKey(envelope: string, context = ''): boolean {
    return this.openWith(envelope, context).current;
  }

  private openWith(envelope: string, context: string): { plaintext: string; current: boolean } {
    const [version, iv, tag, ct] = envelope.split('.');
    if (version !== VERSION || !iv || !tag || ct === undefined) throw new Error('Unknown secret envelope');
    let failure: unknown;
    for (const key of [this.key, ...this.previous]) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        const plaintext = Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
        return { plaintext, current: key === this.key };
      } catch (e) {
        failure = e;
      }
    }
    throw failure;
  }
}
