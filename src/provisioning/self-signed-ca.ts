import { createHash, generateKeyPairSync, randomBytes, sign, X509Certificate } from 'crypto';

/**
 * A self-signed X.509 CA certificate (ECDSA P-256, SHA-256) built with Node's crypto only: the key pair
 * comes from `generateKeyPairSync`, the certificate body is a small DER encoding written here (Node can
 * parse certificates but not issue them), and the result is checked by parsing it back with
 * `X509Certificate` and verifying its signature. The simulated driver uses it as a cluster's CA.
 */

// ------------------------------------------------------------------------------------ DER encoding

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const tlv = (tag: number, content: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
const sequence = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const explicit = (tagNumber: number, inner: Buffer): Buffer => tlv(0xa0 | tagNumber, inner);
const octetString = (content: Buffer): Buffer => tlv(0x04, content);
const bitString = (content: Buffer, unusedBits = 0): Buffer => tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), content]));
const utf8String = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
const boolean = (v: boolean): Buffer => tlv(0x01, Buffer.from([v ? 0xff : 0x00]));

/** A non-negative INTEGER from big-endian bytes (a leading 0x00 keeps it positive). */
function unsignedInteger(bytes: Buffer): Buffer {
  let b = bytes;
  while (b.length > 1 && b[0] === 0 && (b[1] & 0x80) === 0) b = b.subarray(1);
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [parts[0] * 40 + parts[1]];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime before 2050, GeneralizedTime from then on (RFC 5280, 4.1.2.5). */
function time(d: Date): Buffer {
  const p = (n: number) => String(n).padStart(2, '0');
  const rest = `${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  const year = d.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(`${p(year % 100)}${rest}`, 'ascii')) : tlv(0x18, Buffer.from(`${year}${rest}`, 'ascii'));
}

const OID = {
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  subjectKeyIdentifier: '2.5.29.14',
};

const name = (commonName: string, organization: string): Buffer =>
  sequence(set(sequence(oid(OID.organization), utf8String(organization))), set(sequence(oid(OID.commonName), utf8String(commonName))));

// ------------------------------------------------------------------------------------ certificate

export interface SelfSignedCa {
  /** PEM of the certificate (`-----BEGIN CERTIFICATE-----`). */
  certificatePem: string;
  /** SHA-256 fingerprint as Node prints it (AA:BB:...). */
  fingerprint256: string;
  notAfter: Date;
}

/**
 * A CA certificate valid from `now` (minus 5 minutes of clock skew) for `validDays`; CA:TRUE, key usage
 * certificate and CRL signing. The private key is not returned: nothing in this service signs with it.
 */
export function createSelfSignedCa(commonName: string, now: Date, validDays = 3650, organization = 'cluster-management-service'): SelfSignedCa {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  // For P-256 the SubjectPublicKeyInfo ends with the 65-byte uncompressed point (the BIT STRING's value).
  const keyId = createHash('sha1').update(spki.subarray(spki.length - 65)).digest();
  const serial = randomBytes(16);
  serial[0] &= 0x7f;
  serial[0] |= 0x01;
  const notBefore = new Date(Math.floor(now.getTime() / 1000) * 1000 - 5 * 60 * 1000);
  const notAfter = new Date(notBefore.getTime() + validDays * 24 * 60 * 60 * 1000);
  const subject = name(commonName, organization);
  const algorithm = sequence(oid(OID.ecdsaWithSha256));

  const extensions = sequence(
    sequence(oid(OID.basicConstraints), boolean(true), octetString(sequence(boolean(true)))),
    // digitalSignature (bit 0), keyCertSign (bit 5), cRLSign (bit 6): 1000 0110, one unused trailing bit.
    sequence(oid(OID.keyUsage), boolean(true), octetString(bitString(Buffer.from([0x86]), 1))),
    sequence(oid(OID.subjectKeyIdentifier), octetString(octetString(keyId))),
  );
  const tbs = sequence(
    explicit(0, unsignedInteger(Buffer.from([2]))), // v3
    unsignedInteger(serial),
    algorithm,
    subject, // issuer: self-signed
    sequence(time(notBefore), time(notAfter)),
    subject,
    spki,
    explicit(3, extensions),
  );
  const signature = sign('sha256', tbs, privateKey); // DER-encoded ECDSA signature
  const der = sequence(tbs, algorithm, bitString(signature));
  const body = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  const certificatePem = `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;

  // Parse it back: a malformed encoding fails here rather than in a client.
  const parsed = new X509Certificate(certificatePem);
  if (!parsed.ca || !parsed.verify(publicKey)) throw new Error('Generated CA certificate did not verify');
  return { certificatePem, fingerprint256: parsed.fingerprint256, notAfter };
}
