/**
 * Who may use the console, and the CSRF token of its forms.
 *
 * - With a token (`serve.consoleToken` / LISTSYNC_CONSOLE_TOKEN, or one serve
 *   generated): `Authorization: Bearer <token>`, or the `listsync_console`
 *   cookie, which `?token=<token>` sets once (HttpOnly, SameSite=Strict) before
 *   a redirect to the same page without it, so the token leaves the address bar.
 * - Without one: loopback clients only, addressing a loopback host name
 *   (a page of another site that resolves its name to 127.0.0.1 is refused).
 * - Every POST carries `csrf`, an HMAC of the credential under a key of this
 *   process; a missing or wrong one is 403 and changes nothing
 *   (test/console/console-http.test.ts › "without the token every console path is 401",
 *   › "a POST with a wrong CSRF token is 403 and changes nothing").
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const COOKIE = 'listsync_console';

export type Verdict =
  | { kind: 'ok'; credential: string }
  | { kind: 'redirect'; location: string; cookie: string }
  | { kind: 'refused'; status: 401 | 403; reason: string };

export interface ConsoleAccess {
  /** True when a token is required. */
  readonly tokenRequired: boolean;
  check(req: IncomingMessage, url: URL): Verdict;
  csrfFor(credential: string): string;
  csrfValid(credential: string, given: string | null | undefined): boolean;
}

const same = (a: string, b: string): boolean => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.replace(/^::ffff:/i, '');
  return a === '::1' || /^127\.\d+\.\d+\.\d+$/.test(a);
}

/** A Host header naming a loopback host (localhost, 127.x, [::1]), with or without a port. */
function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host
    .replace(/:\d+$/, '')
    .replace(/^\[(.*)\]$/, '$1')
    .toLowerCase();
  return name === 'localhost' || isLoopbackAddress(name);
}

function cookieValue(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === COOKIE) return decodeURIComponent(part.slice(at + 1).trim());
  }
  return undefined;
}

export function createAccess(token: string | undefined): ConsoleAccess {
  const key = randomBytes(32);
  const csrfFor = (credential: string) => createHmac('sha256', key).update(`csrf\n${credential}`).digest('base64url');
  return {
    tokenRequired: token !== undefined,
    csrfFor,
    csrfValid: (credential, given) => typeof given === 'string' && same(csrfFor(credential), given),
    check(req, url) {
      if (token === undefined) {
        if (!isLoopbackAddress(req.socket.remoteAddress) || !isLoopbackHost(req.headers.host))
          return {
            kind: 'refused',
            status: 401,
            reason: 'no console token is set, so only this machine (a loopback address) may open the console',
          };
        return { kind: 'ok', credential: 'loopback' };
      }
      const fromQuery = url.searchParams.get('token');
      if (fromQuery !== null) {
        if (!same(fromQuery, token)) return { kind: 'refused', status: 401, reason: 'the token in the address is not the console token' };
        url.searchParams.delete('token');
        const rest = url.searchParams.toString();
        return {
          kind: 'redirect',
          location: `${url.pathname}${rest ? `?${rest}` : ''}`,
          cookie: `${COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`,
        };
      }
      const bearer = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
      const given = bearer ?? cookieValue(req);
      if (given !== undefined && same(given, token)) return { kind: 'ok', credential: token };
      return { kind: 'refused', status: 401, reason: 'sign in with the console token' };
    },
  };
}
