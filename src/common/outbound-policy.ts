import { Injectable } from '@nestjs/common';
import { promises as dnsPromises, LookupAddress } from 'dns';
import * as http from 'http';
import * as https from 'https';
import * as ipaddr from 'ipaddr.js';
import type { LookupFunction } from 'net';
import { AppConfig } from '../config/app-config';
import { ValidationFailedException } from './errors';

/**
 * The ONE outbound policy for calls to user-supplied URLs (docs/adr/0049-one-outbound-policy.md):
 * - only http: and https:, no credentials (userinfo) in the URL, a host is required;
 * - every address the host resolves to must be public unicast: loopback, private (RFC 1918,
 *   fc00::/7), link-local (169.254/16 incl. the cloud metadata address, fe80::/10), unspecified,
 *   carrier-grade NAT (100.64/10), multicast, broadcast and reserved ranges are refused
 *   (classification by ipaddr.js `range()`; IPv4-mapped IPv6 is unwrapped first);
 * - checked when the URL is written (400 naming the field) and again at call time: the connection
 *   is made to the address checked by the call-time resolution (custom `lookup`), so a DNS answer
 *   that changes between the check and the connect (rebinding) cannot reach an internal address;
 * - bounded: OUTBOUND_TIMEOUT_MS for the whole exchange, a maximum response size, redirects are
 *   never followed (a 3xx is returned to the caller as it is).
 * `OUTBOUND_ALLOW_PRIVATE_NETWORKS=true` lifts the address rule only (development and tests).
 * `OUTBOUND_ALLOWLIST` (host names, `host:port`, IP addresses or CIDRs) lifts the address rule for
 * the listed destinations only; the cloud metadata address stays refused unless listed exactly.
 */

/** Cloud instance metadata endpoints (AWS/GCP/Azure IPv4, AWS IPv6). */
const METADATA_ADDRESSES = ['169.254.169.254', 'fd00:ec2::254'].map((a) => ipaddr.parse(a).toNormalizedString());

interface AllowEntry {
  host?: string;
  cidr?: [ipaddr.IPv4 | ipaddr.IPv6, number];
  exact?: string;
  port?: number;
}

/** Parses OUTBOUND_ALLOWLIST; throws on an entry it cannot read (the app refuses to start). */
export function parseOutboundAllowlist(raw: string): AllowEntry[] {
  const entries: AllowEntry[] = [];
  for (const item of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    let hostPart = item;
    let port: number | undefined;
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(item);
    const hostPort = /^([^:]+):(\d+)$/.exec(item);
    if (bracketed) {
      hostPart = bracketed[1];
      port = bracketed[2] ? Number(bracketed[2]) : undefined;
    } else if (hostPort) {
      hostPart = hostPort[1];
      port = Number(hostPort[2]);
    }
    if (port !== undefined && (port < 1 || port > 65535)) throw new Error(`OUTBOUND_ALLOWLIST: invalid port in '${item}'`);
    if (hostPart.includes('/')) {
      try {
        const cidr = ipaddr.parseCIDR(hostPart);
        entries.push({ cidr, port });
      } catch {
        throw new Error(`OUTBOUND_ALLOWLIST: '${item}' is not a valid CIDR`);
      }
    } else if (ipaddr.isValid(hostPart)) {
      const addr = ipaddr.process(hostPart);
      entries.push({ cidr: [addr, addr.kind() === 'ipv4' ? 32 : 128], exact: addr.toNormalizedString(), port });
    } else if (/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(hostPart)) {
      entries.push({ host: hostPart.toLowerCase(), port });
    } else {
      throw new Error(`OUTBOUND_ALLOWLIST: '${item}' is not a host, host:port, IP address or CIDR`);
    }
  }
  return entries;
}

/** Largest response body read from an outbound call. */
export const OUTBOUND_MAX_RESPONSE_BYTES = 1024 * 1024;
/** Longest URL accepted. */
export const OUTBOUND_MAX_URL_LENGTH = 2048;

export class OutboundPolicyError extends Error {
  constructor(
    message: string,
    readonly code: 'SCHEME' | 'SYNTAX' | 'USERINFO' | 'ADDRESS' | 'RESOLUTION' | 'TIMEOUT' | 'TOO_LARGE' | 'NETWORK',
  ) {
    super(message);
  }
}

/**
 * Why an address may not be called, or null when it is public unicast.
 * Returns the ipaddr.js range name (e.g. 'loopback', 'private', 'linkLocal').
 */
export function forbiddenAddressReason(address: string): string | null {
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(address); // ::ffff:127.0.0.1 becomes 127.0.0.1
  } catch {
    return 'invalid';
  }
  const range = addr.range();
  if (range !== 'unicast') return range;
  // Only the global unicast block 2000::/3 is routable on the internet.
  if (addr.kind() === 'ipv6' && !addr.match(ipaddr.IPv6.parse('2000::'), 3)) return 'reserved';
  return null;
}

/** Syntax part of the policy: scheme, no userinfo, a host. Returns the parsed URL. */
export function parseOutboundUrl(raw: string): URL {
  if (typeof raw !== 'string' || raw.length === 0) throw new OutboundPolicyError('must be an http or https URL', 'SYNTAX');
  if (raw.length > OUTBOUND_MAX_URL_LENGTH)
    throw new OutboundPolicyError(`must be at most ${OUTBOUND_MAX_URL_LENGTH} characters`, 'SYNTAX');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundPolicyError('must be an absolute http or https URL', 'SYNTAX');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new OutboundPolicyError(`must use http or https, not ${url.protocol.replace(/:$/, '')}`, 'SCHEME');
  if (url.username || url.password) throw new OutboundPolicyError('must not contain credentials (user:password@)', 'USERINFO');
  if (!url.hostname) throw new OutboundPolicyError('must name a host', 'SYNTAX');
  return url;
}

/** The port a URL connects to (explicit, else the scheme's default). */
function effectivePort(url: URL): number {
  return url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
}

/** The URL's host without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

export interface OutboundRequest {
  method?: 'GET' | 'HEAD' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Defaults to OUTBOUND_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Defaults to OUTBOUND_MAX_RESPONSE_BYTES. */
  maxBytes?: number;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export type Resolver = (host: string) => Promise<LookupAddress[]>;
const systemResolver: Resolver = (host) => dnsPromises.lookup(host, { all: true, verbatim: true });

@Injectable()
export class OutboundPolicy {
  /** Replaceable in unit tests; the system resolver otherwise. */
  resolver: Resolver = systemResolver;

  private readonly allowlist: AllowEntry[];

  constructor(private readonly config: AppConfig) {
    this.allowlist = parseOutboundAllowlist(config.OUTBOUND_ALLOWLIST ?? '');
  }

  /** True when OUTBOUND_ALLOWLIST lifts the address rule for this address reached as host:port. */
  isAllowListed(host: string, port: number | undefined, address: string): boolean {
    let addr: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      addr = ipaddr.process(address);
    } catch {
      return false;
    }
    const normalized = addr.toNormalizedString();
    const isMetadata = METADATA_ADDRESSES.includes(normalized);
    const lowerHost = host.toLowerCase();
    return this.allowlist.some((e) => {
      if (e.port !== undefined && e.port !== port) return false;
      if (isMetadata) return e.exact === normalized;
      if (e.host) return e.host === lowerHost;
      if (e.cidr) return addr.kind() === e.cidr[0].kind() && addr.match(e.cidr);
      return false;
    });
  }

  get allowPrivateNetworks(): boolean {
    return this.config.OUTBOUND_ALLOW_PRIVATE_NETWORKS;
  }

  /**
   * Checks a URL completely: syntax, then every resolved address. Returns the parsed URL and the
   * addresses. Throws OutboundPolicyError with a sentence saying what is wrong.
   */
  async check(raw: string): Promise<{ url: URL; addresses: LookupAddress[] }> {
    const url = parseOutboundUrl(raw);
    const addresses = await this.resolveChecked(bareHost(url), effectivePort(url));
    return { url, addresses };
  }

  /** Write-time check: 400 naming `field` when the URL is not allowed. */
  async assertAllowed(field: string, raw: string): Promise<URL> {
    try {
      return (await this.check(raw)).url;
    } catch (e) {
      if (e instanceof OutboundPolicyError) throw ValidationFailedException.forField(field, `${field} ${e.message}`);
      throw e;
    }
  }

  /**
   * What can be checked of a URL where it is saved (a webhook, a dashboard integration), without depending on DNS:
   * its form, and, when its host is an address literal or `localhost`, that address (400 naming `field`). A host
   * name is not resolved here: every request to the URL resolves it and checks each address (request()), which
   * DNS rebinding makes necessary anyway, so a save never fails because DNS is unavailable or not yet set up.
   */
  async assertAllowedWhenSaved(field: string, raw: string): Promise<URL> {
    const url = this.assertWellFormed(field, raw);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (ipaddr.isValid(host) || /^localhost\.?$/i.test(host) || /\.localhost\.?$/i.test(host)) return this.assertAllowed(field, raw);
    return url;
  }

  /** The URL's form only (scheme, no credentials, a host): 400 naming `field` otherwise. Where it resolves is not checked. */
  assertWellFormed(field: string, raw: string): URL {
    try {
      return parseOutboundUrl(raw);
    } catch (e) {
      if (e instanceof OutboundPolicyError) throw ValidationFailedException.forField(field, `${field} ${e.message}`);
      throw e;
    }
  }

  /** Resolves a host (or takes an IP literal) and refuses it when any address is internal. */
  async resolveChecked(host: string, port?: number): Promise<LookupAddress[]> {
    let addresses: LookupAddress[];
    if (ipaddr.isValid(host)) {
      addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
    } else {
      try {
        addresses = await this.resolver(host);
      } catch {
        throw new OutboundPolicyError(`host '${host}' could not be resolved`, 'RESOLUTION');
      }
      if (addresses.length === 0) throw new OutboundPolicyError(`host '${host}' could not be resolved`, 'RESOLUTION');
    }
    if (!this.allowPrivateNetworks) {
      for (const a of addresses) {
        const reason = forbiddenAddressReason(a.address);
        if (reason && !this.isAllowListed(host, port, a.address))
          throw new OutboundPolicyError(
            `must not point to an internal address ('${host}' resolves to ${a.address}, a ${reason} address)`,
            'ADDRESS',
          );
      }
    }
    return addresses;
  }

  /**
   * Performs one request under the policy. The URL is re-checked now; the socket connects to an
   * address the policy accepted (the lookup hook re-resolves and re-checks, so nothing else is
   * reachable); the whole exchange is bounded in time and size; redirects are returned, not followed.
   */
  async request(raw: string, req: OutboundRequest = {}): Promise<OutboundResponse> {
    const url = parseOutboundUrl(raw);
    const host = bareHost(url);
    const port = effectivePort(url);
    await this.resolveChecked(host, port); // refuses early with a clear reason (IP literals never reach lookup)
    const timeoutMs = req.timeoutMs ?? this.config.OUTBOUND_TIMEOUT_MS;
    const maxBytes = req.maxBytes ?? OUTBOUND_MAX_RESPONSE_BYTES;
    const lookup: LookupFunction = (hostname, options, callback) => {
      this.resolveChecked(hostname, port).then(
        (addresses) => {
          const family = (options as { family?: number }).family;
          const usable = family ? addresses.filter((a) => a.family === family) : addresses;
          const chosen = usable[0] ?? addresses[0];
          if ((options as { all?: boolean }).all) (callback as (e: null, a: LookupAddress[]) => void)(null, usable.length ? usable : addresses);
          else callback(null, chosen.address, chosen.family);
        },
        (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
      );
    };
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<OutboundResponse>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | null, value?: OutboundResponse) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value!);
      };
      const request = client.request(
        url,
        {
          method: req.method ?? 'GET',
          headers: { 'user-agent': 'cluster-management-service', ...(req.headers ?? {}) },
          lookup,
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) {
              request.destroy();
              finish(new OutboundPolicyError(`the response is larger than ${maxBytes} bytes`, 'TOO_LARGE'));
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () => finish(null, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', (e) => finish(new OutboundPolicyError(`the connection failed: ${e.message}`, 'NETWORK')));
        },
      );
      const timer = setTimeout(() => {
        finish(new OutboundPolicyError(`no answer within ${timeoutMs} ms`, 'TIMEOUT'));
        request.destroy();
      }, timeoutMs);
      request.on('error', (e: NodeJS.ErrnoException) => {
        if (e instanceof OutboundPolicyError) return finish(e);
        finish(new OutboundPolicyError(`the host could not be reached (${e.code ?? e.message})`, 'NETWORK'));
      });
      if (req.body !== undefined) request.write(req.body);
      request.end();
    });
  }
}
