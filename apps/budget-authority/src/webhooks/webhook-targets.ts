// Which hosts and addresses a webhook call may reach (ADR 0053): never a private, loopback,
// link-local, CGNAT, multicast, unspecified or cluster-internal one, in any of its IPv6 forms,
// unless an operator allow-list names it. A name is resolved and every address it resolves to
// is checked; the delivery then connects only to the addresses that were checked, so a DNS
// answer that changes between the check and the connection cannot lead a call inside.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { WebhooksConfig } from '@tally/platform-app';

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** The resolver port: the system's (getaddrinfo, as for every other connection of the process), or a test's. */
export type HostLookup = (host: string) => Promise<readonly ResolvedAddress[]>;

export const systemLookup: HostLookup = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = readonly [Address, number];

export interface TargetPolicy {
  readonly allowLoopback: boolean;
  readonly allowCidrs: readonly Cidr[];
  readonly allowHosts: readonly string[];
  readonly internalCidrs: readonly Cidr[];
  readonly internalHostSuffixes: readonly string[];
}

export type TargetCheck =
  | { readonly ok: true; readonly addresses: readonly ResolvedAddress[] }
  | { readonly ok: false; readonly code: 'refused_target' | 'dns_error' };

const REFUSED: TargetCheck = { ok: false, code: 'refused_target' };
const UNRESOLVED: TargetCheck = { ok: false, code: 'dns_error' };
/** The well-known NAT64 prefix: the IPv4 address in its last 32 bits is what a NAT64 gateway reaches. */
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');
/** Global unicast IPv6; everything outside it is unallocated or special. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/** The policy the configuration describes; the config validator has checked every CIDR already. */
export function targetPolicyOf(w: WebhooksConfig): TargetPolicy {
  return {
    allowLoopback: w.allow_http_loopback,
    allowCidrs: w.allow_cidrs.map((c) => ipaddr.parseCIDR(c)),
    allowHosts: w.allow_hosts,
    internalCidrs: w.internal_cidrs.map((c) => ipaddr.parseCIDR(c)),
    internalHostSuffixes: w.internal_host_suffixes,
  };
}

function inAny(ip: Address, cidrs: readonly Cidr[]): boolean {
  return cidrs.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
}

/** The IPv4 address a NAT64 address carries, or the address itself. */
function unwrapped(raw: string): Address {
  // ::ffff:a.b.c.d (IPv4-mapped) is the IPv4 address itself.
  const ip = ipaddr.process(raw);
  if (ip.kind() !== 'ipv6' || !ip.match(NAT64)) return ip;
  const bytes = ip.toByteArray();
  return ipaddr.fromByteArray(bytes.slice(12));
}

/** Whether a call may connect to this address. */
export function addressAllowed(raw: string, policy: TargetPolicy): boolean {
  if (!ipaddr.isValid(raw)) return false;
  const ip = unwrapped(raw);
  if (inAny(ip, policy.allowCidrs)) return true;
  if (inAny(ip, policy.internalCidrs)) return false;
  const range = ip.range();
  if (range === 'loopback') return policy.allowLoopback;
  // Private, link-local, CGNAT, multicast, unspecified, broadcast, reserved, 6to4, Teredo…: all refused.
  if (range !== 'unicast') return false;
  return ip.kind() === 'ipv4' || ip.match(GLOBAL_UNICAST_V6);
}

/** The URL's host as it is resolved: without IPv6 brackets or a final dot, in lower case. */
export function hostOf(url: URL): string {
  return url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
}

function allowListed(host: string, policy: TargetPolicy): boolean {
  return policy.allowHosts.some((h) => (h.startsWith('*.') ? host.endsWith(h.slice(1)) : host === h));
}

function internalName(host: string, policy: TargetPolicy): boolean {
  return policy.internalHostSuffixes.some((s) => host === s || host.endsWith(`.${s}`));
}

function within<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('lookup timed out')), timeoutMs);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Where a call to `url` may connect: every address its host resolves to, when each is allowed.
 * An allow-listed name is trusted whatever it resolves to; any other name is refused when one
 * of its addresses is internal (the connection could pick that one).
 */
export async function checkTarget(
  url: URL,
  policy: TargetPolicy,
  lookupHost: HostLookup,
  timeoutMs: number,
): Promise<TargetCheck> {
  const host = hostOf(url);
  const family = isIP(host);
  if (family !== 0)
    return addressAllowed(host, policy)
      ? { ok: true, addresses: [{ address: host, family: family as 4 | 6 }] }
      : REFUSED;
  const listed = allowListed(host, policy);
  if (!listed && internalName(host, policy)) return REFUSED;
  let addresses: readonly ResolvedAddress[];
  try {
    addresses = await within(lookupHost(host), timeoutMs);
  } catch {
    return UNRESOLVED;
  }
  if (addresses.length === 0) return UNRESOLVED;
  if (!listed && !addresses.every((a) => addressAllowed(a.address, policy))) return REFUSED;
  return { ok: true, addresses };
}

/** What a registration answers about its URL's target: only a refusal stops it (ADR 0053). */
export const TARGET_REFUSED_MESSAGE =
  'url must not point at a private, loopback, link-local or cluster-internal address ' +
  '(an operator can allow one with webhooks.allow_cidrs or webhooks.allow_hosts)';
