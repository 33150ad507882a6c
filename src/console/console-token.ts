/**
 * The token the console asks for: `serve.consoleToken` (LISTSYNC_CONSOLE_TOKEN)
 * when set; none on a loopback address (loopback clients only); otherwise one
 * generated for this process, which serve prints once at start.
 */
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { isLoopbackAddress } from './access.js';

export function consoleToken(config: Config, host: string): { token?: string; generated: boolean } {
  if (config.serve.consoleToken !== undefined) return { token: config.serve.consoleToken, generated: false };
  if (host === 'localhost' || isLoopbackAddress(host)) return { generated: false };
  return { token: randomBytes(24).toString('base64url'), generated: true };
}

/** The line serve and the demo print: where the console is and how to get in (a generated token once, nothing else secret). */
export function consoleAnnouncement(url: string, access: { token?: string; generated: boolean }): string {
  if (access.generated && access.token)
    return `console on ${url} (open ${url}/?token=${access.token} once; the token was generated for this run: set LISTSYNC_CONSOLE_TOKEN to keep one)`;
  if (access.token) return `console on ${url} (sign in with LISTSYNC_CONSOLE_TOKEN: ${url}/?token=<token>)`;
  return `console on ${url} (this machine only; set LISTSYNC_CONSOLE_TOKEN to open it to others)`;
}
