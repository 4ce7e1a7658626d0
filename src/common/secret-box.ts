import { Injectable } from '@nestjs/common';
import { createCipheriv, createDecipheriv, randomBytes } from 'crypto';
import { AppConfig } from '../config/app-config';

const VERSION = 'v1';

/**
 * Encrypts secrets at rest with AES-256-GCM (Node's crypto; no extra dependency needed).
 * Envelope: "v1.<iv>.<tag>.<ciphertext>", each part base64url. The key comes from
 * CREDENTIALS_ENCRYPTION_KEY (or DATA_DIR/credentials.key with the embedded database).
 */
@Injectable()
export class SecretBox {
  private readonly key: Buffer;

  constructor(config: AppConfig) {
    const raw = config.CREDENTIALS_ENCRYPTION_KEY;
    if (!raw) throw new Error('CREDENTIALS_ENCRYPTION_KEY is not set');
    this.key = /^[0-9a-fA-F]{64}$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
    if (this.key.length !== 32) throw new Error('CREDENTIALS_ENCRYPTION_KEY must be 32 bytes');
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
    const [version, iv, tag, ct] = envelope.split('.');
    if (version !== VERSION || !iv || !tag || ct === undefined) throw new Error('Unknown secret envelope');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}
