import * as ipaddr from 'ipaddr.js';

/** Lists of IP addresses and CIDR ranges: the form of the trusted-proxy setting and of a token's IP restriction. */

/** Parses "10.0.0.0/8, 192.168.1.7" into address ranges; returns the offending entry when one is invalid. */
export function parseAddressList(list: string): { ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][]; invalid?: string } {
  const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  for (const raw of list.split(',').map((s) => s.trim()).filter(Boolean)) {
    try {
      if (raw.includes('/')) ranges.push(ipaddr.parseCIDR(raw));
      else {
        const addr = ipaddr.parse(raw);
        ranges.push([addr, addr.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      return { ranges, invalid: raw };
    }
  }
  return { ranges };
}

/** True when `address` falls in one of the comma-separated IPs/CIDRs. */
export function addressAllowed(address: string | undefined, list: string): boolean {
  if (!address) return false;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(address); // unwraps IPv4-mapped IPv6 (::ffff:10.0.0.1)
  } catch {
    return false;
  }
  const { ranges } = parseAddressList(list);
  return ranges.some(([range, bits]) => {
    if (range.kind() !== addr.kind()) return false;
    return addr.match(range, bits);
  });
}
