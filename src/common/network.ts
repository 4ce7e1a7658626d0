import * as ipaddr from 'ipaddr.js';

/** Validates a CIDR string (IPv4 or IPv6) with the network address as its base. */
export function isValidCidr(value: string): boolean {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}
