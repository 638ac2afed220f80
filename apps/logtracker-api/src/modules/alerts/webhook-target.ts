import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { hostname as machineHostname } from 'node:os';
import ipaddr from 'ipaddr.js';
import { Agent, type Dispatcher } from 'undici';

/**
 * Webhook URLs are chosen by project owners, and the server POSTs to them: without a check, an
 * owner could make it reach what only it can reach (a cloud metadata endpoint, the database, an
 * admin port on loopback). Unless private networks are allowed, a webhook may only go to public
 * unicast addresses. The host name is resolved when the URL is configured and again when a
 * delivery is made, and the delivery's socket connects only to an address that passed the check
 * (the agent's own lookup refuses the others), so a DNS answer that changes between the check and
 * the connection (rebinding) cannot slip through.
 */

/** Every address of a host name, as `dns.lookup(name, { all: true })` answers them. */
export type ResolveHost = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolve: ResolveHost = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

/**
 * IPv6 with a dotted IPv4 tail in the URL standard's canonical form (`::8.8.8.8` → `::808:808`):
 * ipaddr.js reads any dotted tail as IPv4-mapped, which would pass the compatible form as mapped.
 */
function canonical(address: string): string {
  if (!address.includes(':') || !address.includes('.')) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

/** The IPv4 address an IPv6 one carries in its last 32 bits. */
function lastIpv4(address: ipaddr.IPv6): ipaddr.IPv4 {
  const [high, low] = [address.parts[6]!, address.parts[7]!];
  return new ipaddr.IPv4([high >> 8, high & 255, low >> 8, low & 255]);
}

/**
 * Why a webhook may not reach this IP address, or null when it is a public unicast one. IPv4
 * written inside IPv6 is judged as the IPv4 it carries (IPv4-mapped, NAT64's well-known prefix);
 * the deprecated forms that route to an embedded IPv4 by other means (IPv4-compatible `::a.b.c.d`,
 * 6to4, Teredo) are refused outright, as is every range ipaddr.js names other than `unicast`.
 */
export function addressProblem(address: string): string | null {
  if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
  const parsed = ipaddr.parse(canonical(address));
  if (parsed.kind() === 'ipv4') {
    const range = (parsed as ipaddr.IPv4).range();
    return range === 'unicast' ? null : `${parsed.toString()} is a ${range} address`;
  }
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return addressProblem(v6.toIPv4Address().toString());
  if (v6.parts.slice(0, 6).every((part) => part === 0)) {
    // ::/96: the unspecified and loopback addresses, and the deprecated IPv4-compatible form.
    return `${v6.toString()} is an IPv4-compatible, loopback or unspecified address`;
  }
  if (v6.match(ipaddr.IPv6.parseCIDR('64:ff9b::/96'))) {
    const embedded = addressProblem(lastIpv4(v6).toString());
    return embedded ? `${v6.toString()} is NAT64 of a special address (${embedded})` : null;
  }
  const range = v6.range();
  if (range === '6to4' || range === 'teredo') return `${v6.toString()} is a ${range} address (it tunnels to an embedded IPv4)`;
  return range === 'unicast' ? null : `${v6.toString()} is a ${range} address`;
}

/** Whether an IP address is one a webhook may not reach (private, loopback, link-local, reserved …). */
export function isSpecialAddress(address: string): boolean {
  return addressProblem(address) !== null;
}

export class WebhookTargetError extends Error {
  readonly code = 'EWEBHOOKTARGET';
  constructor(message: string) {
    super(message);
    this.name = 'WebhookTargetError';
  }
}

/** The URL's host as a name without the root dot (`LOCALHOST.` is `localhost`), or a bare IP. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase().replace(/\.+$/, '');
}

const LOCAL_SUFFIXES = ['.localhost', '.local', '.internal', '.localdomain', '.home.arpa'];

function isLocalName(host: string): boolean {
  const self = machineHostname().toLowerCase().replace(/\.+$/, '');
  return (
    host === 'localhost' ||
    host === self ||
    host === self.split('.')[0] ||
    !host.includes('.') ||
    LOCAL_SUFFIXES.some((suffix) => host.endsWith(suffix))
  );
}

/**
 * Refuses, before any DNS, what is special on its face: an IP literal outside public unicast, a
 * name such as `localhost` (any case, with or without the root dot), this machine's own name, or a
 * single-label name (resolved through the local search domains). Answers null when the URL may
 * go on to be resolved.
 */
export function literalTargetProblem(rawUrl: string): string | null {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return 'Must be an http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'Must be an http(s) URL';
  const host = hostOf(url);
  if (ipaddr.isValid(host)) {
    return addressProblem(host) ? 'Must not point at a private, loopback, link-local or otherwise special address' : null;
  }
  if (isLocalName(host)) return 'Must not point at a local host name';
  return null;
}

/**
 * The whole check of a webhook URL: its face, then every address its host name resolves to.
 * Answers a reason for the refusal, or null.
 */
export async function webhookTargetProblem(rawUrl: string, resolve: ResolveHost): Promise<string | null> {
  const literal = literalTargetProblem(rawUrl);
  if (literal) return literal;
  const host = hostOf(new URL(rawUrl));
  if (ipaddr.isValid(host)) return null;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    return `The host name ${host} does not resolve`;
  }
  if (addresses.length === 0) return `The host name ${host} does not resolve`;
  const refused = addresses.find((a) => isSpecialAddress(a.address));
  return refused ? `The host name ${host} resolves to a private or otherwise special address (${refused.address})` : null;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `dns.lookup` for the delivery sockets that answers only when every address of the name is
 * public, so the connection goes to an address that passed the check at that very moment.
 */
export function publicLookup(resolve: ResolveHost) {
  return (hostname: string, options: { all?: boolean } | number | undefined, callback: LookupCallback) => {
    const host = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase().replace(/\.+$/, '');
    resolve(host).then(
      (list) => {
        const refused = list.find((a) => isSpecialAddress(a.address));
        if (refused) {
          return callback(new WebhookTargetError(`${hostname} resolves to a private or otherwise special address (${refused.address})`), []);
        }
        const first = list[0];
        if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
        if (typeof options === 'object' && options?.all) return callback(null, list);
        return callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}

/** A `dns.lookup` over a resolver that lets every address through (private networks allowed). */
function anyLookup(resolve: ResolveHost) {
  return (hostname: string, options: { all?: boolean } | number | undefined, callback: LookupCallback) => {
    resolve(hostname.replace(/^\[(.*)\]$/, '$1')).then(
      (list) => {
        const first = list[0];
        if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
        if (typeof options === 'object' && options?.all) return callback(null, list);
        return callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}

/** Checks webhook URLs and carries their deliveries; see the top of this file. */
export interface WebhookGuard {
  /** Why this URL may not be a webhook target now (face and DNS), or null. */
  problem(url: string): Promise<string | null>;
  /** The dispatcher deliveries go through; it connects to checked addresses only. */
  readonly agent: Dispatcher;
  close(): Promise<void>;
}

export function createWebhookGuard(opts: { allowPrivateNetworks: boolean; resolve?: ResolveHost }): WebhookGuard {
  const resolve = opts.resolve ?? systemResolve;
  if (opts.allowPrivateNetworks) {
    // Development: local receivers are fine; names still go through the given resolver.
    const agent = opts.resolve ? new Agent({ connect: { lookup: anyLookup(opts.resolve) } }) : new Agent();
    return { problem: async () => null, agent, close: () => agent.close() };
  }
  const agent = new Agent({ connect: { lookup: publicLookup(resolve) } });
  return { problem: (url) => webhookTargetProblem(url, resolve), agent, close: () => agent.close() };
}
