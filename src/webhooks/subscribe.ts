/**
 * Webhook subscriptions: `listsync hooks subscribe` creates one on the
 * platform (`POST /hooks`) with a callback URL holding a fresh secret token,
 * and keeps it in `listsync.webhook_subscriptions` so the receiver can check
 * the Channel and Type of what arrives on that token.
 *
 * The row is written before the platform is asked, so a callback that the
 * platform sends at once already finds its subscription; if the platform
 * refuses, the row is removed again.
 */
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import type { Knex } from '../db.js';
import { ConfigError, UsageError } from '../errors.js';
import type { PlatformClient } from '../platform/client.js';
import { deleteSubscription, insertSubscription, setPlatformId, subscriptionsWithActivity } from '../store/webhook-subscriptions.js';

export const DEFAULT_HOOK_RESOURCE = 'workflow/tasks';
/** Path prefix of the receiver in `serve`. */
export const HOOKS_PATH = '/hooks/';

export interface SubscribeOptions {
  channel: string;
  type: number;
  resource?: string;
  /** Base URL the platform reaches `serve` at; default `serve.publicUrl`. */
  callbackUrl?: string;
}

export interface Subscription {
  id: number;
  platformId: string | null;
  resource: string;
  channel: string;
  type: number;
  token: string;
  callbackUrl: string;
  createdAt: Date;
}

export interface SubscriptionSummary extends Omit<Subscription, 'token' | 'callbackUrl'> {
  /** The list of an item event subscription (null for others). */
  listName: string | null;
  /** The token with all but its last 4 characters masked. */
  maskedToken: string;
  /** The callback URL with the token masked. */
  maskedCallbackUrl: string;
  events: number;
  lastEventAt: Date | null;
}

/** A new secret for a callback path: 24 random bytes, base64url (32 characters). */
export function newToken(): string {
  return randomBytes(24).toString('base64url');
}

export function maskToken(token: string): string {
  return token.length <= 4 ? '****' : `${'*'.repeat(Math.min(8, token.length - 4))}${token.slice(-4)}`;
}

/** `<base>/hooks/<token>`; the base comes from `--callback-url` or `serve.publicUrl`. */
export function callbackUrlFor(config: Config, token: string, base?: string): string {
  const from = base ?? config.serve.publicUrl;
  if (!from) {
    throw new ConfigError(
      'No public URL for the webhook callback: set serve.publicUrl in the config (the address the platform reaches "listsync serve" at, e.g. https://sync.example.com), or pass --callback-url.',
      'serve.publicUrl',
    );
  }
  let url: URL;
  try {
    url = new URL(from);
  } catch {
    throw new UsageError(`--callback-url must be an http(s) URL such as https://sync.example.com (got ${JSON.stringify(from)}).`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`the callback base URL must be http(s) (got ${JSON.stringify(from)}).`);
  if (url.search || url.hash)
    throw new UsageError(`the callback base URL must have no query string or fragment (got ${JSON.stringify(from)}).`);
  const path = url.pathname.replace(/\/+$/, '');
  return `${url.origin}${path}${HOOKS_PATH}${token}`;
}

export function parseHookType(value: string): number {
  if (!/^-?\d{1,9}$/.test(value.trim())) throw new UsageError(`--type must be an integer event type code (got ${JSON.stringify(value)}).`);
  return Number(value.trim());
}

export async function subscribe(
  deps: { db: Knex; client: PlatformClient; config: Config },
  options: SubscribeOptions,
): Promise<Subscription> {
  const channel = options.channel.trim();
  if (channel === '') throw new UsageError('--channel must not be empty.');
  if (!Number.isInteger(options.type)) throw new UsageError(`--type must be an integer (got ${String(options.type)}).`);
  const resource = options.resource ?? DEFAULT_HOOK_RESOURCE;
  const token = newToken();
  const callbackUrl = callbackUrlFor(deps.config, token, options.callbackUrl);

  const row = await insertSubscription(deps.db, { resource, channel, type: options.type, token, callbackUrl });
  let platformId: string;
  try {
    ({ id: platformId } = await deps.client.subscribeHook({ resource, channel, type: options.type, callbackUrl }));
  } catch (err) {
    await deleteSubscription(deps.db, row.id);
    throw err;
  }
  await setPlatformId(deps.db, row.id, platformId);
  return { id: row.id, platformId, resource, channel, type: options.type, token, callbackUrl, createdAt: row.created_at };
}

export async function listSubscriptions(db: Knex): Promise<SubscriptionSummary[]> {
  const rows = await subscriptionsWithActivity(db);
  return rows.map((r) => ({
    id: Number(r.id),
    platformId: r.platform_id,
    resource: r.resource,
    channel: r.channel,
    type: r.type,
    listName: r.list_name ?? null,
    createdAt: r.created_at,
    maskedCallbackUrl: r.callback_url.split(r.token).join(maskToken(r.token)),
    maskedToken: maskToken(r.token),
    events: Number(r.events),
    lastEventAt: r.last_event_at,
  }));
}
