/**
 * The line `serve` prints once it listens: the address it is bound to, as bound (a wildcard host
 * says "every interface", never a loopback address it is not limited to), then where this
 * machine reaches /healthz, /metrics and the webhook path (test/serve-banner.test.ts).
 */
import type { AddressInfo } from 'node:net';

const WILDCARDS = new Set(['0.0.0.0', '::', '::0']);

/** `host:port` as a URL's authority (IPv6 in brackets). */
const authority = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`;

export function serveBanner(bound: AddressInfo, hooksPath: string): string {
  const wildcard = WILDCARDS.has(bound.address);
  const local = wildcard ? authority(bound.family === 'IPv6' ? '::1' : '127.0.0.1', bound.port) : authority(bound.address, bound.port);
  const reach = `http://${local}`;
  const where = wildcard ? `every ${bound.family === 'IPv6' ? '' : 'IPv4 '}interface; from this machine ${reach}; ` : '';
  return (
    `listsync serve on http://${authority(bound.address, bound.port)} ` +
    `(${where}healthz: ${reach}/healthz, metrics: ${reach}/metrics, webhooks: ${reach}${hooksPath}<token>)`
  );
}
