/** `listsync hooks subscribe|list|remove`: webhook subscriptions (workflow tasks and list item events). */
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { ensureItemSubscriptions, removeSubscription } from '../realtime/subscriptions.js';
import { table } from '../format.js';
import { listSubscriptions, subscribe, type SubscribeOptions } from '../webhooks/subscribe.js';

export async function runHooksSubscribe(ctx: AppContext, options: SubscribeOptions): Promise<number> {
  const sub = await subscribe({ db: ctx.db, client: ctx.client, config: ctx.config }, options);
  ctx.io.out(
    [
      `subscribed: ${sub.resource}, channel ${JSON.stringify(sub.channel)}, type ${sub.type}`,
      `  platform subscription ID: ${sub.platformId ?? '-'}`,
      `  listsync subscription:    ${sub.id}`,
      `  callback URL:             ${sub.callbackUrl}`,
      'The callback URL holds a secret token: give it only to the platform. "listsync serve" must be reachable at it.',
    ].join('\n'),
  );
  return 0;
}

export async function runHooksList(ctx: AppContext): Promise<number> {
  const subs = await listSubscriptions(ctx.db);
  if (subs.length === 0) {
    ctx.io.out('no webhook subscriptions; create one with "listsync hooks subscribe --channel C --type N"');
    return 0;
  }
  ctx.io.out(
    table(
      ['id', 'platform id', 'resource', 'channel', 'type', 'callback URL', 'events', 'last event', 'created', 'list'],
      subs.map((s) => [s.id, s.platformId, s.resource, s.channel, s.type, s.maskedCallbackUrl, s.events, s.lastEventAt, s.createdAt, s.listName ?? '-']),
    ),
  );
  return 0;
}

const EVENT_NAMES: Record<number, string> = { 3: 'created or modified', 4: 'deleted' };

/** `hooks subscribe --list L`: the list's item event subscriptions (created-or-modified, deleted), reused when they exist. */
export async function runHooksSubscribeList(ctx: AppContext, list: ListConfig, options: { callbackUrl?: string }): Promise<number> {
  const subs = await ensureItemSubscriptions({ db: ctx.db, client: ctx.client, config: ctx.config }, list, options);
  const lines = subs.map(
    (s) => `  ${EVENT_NAMES[s.type] ?? `type ${s.type}`}: listsync subscription ${s.id}, platform hook ${s.platformId ?? '-'} (${s.outcome === 'reused' ? 'already subscribed' : s.outcome})`,
  );
  ctx.io.out([`item events of list ${list.name}:`, ...lines, '"listsync serve" applies them to the mirror; it must be reachable at serve.publicUrl.'].join('\n'));
  return 0;
}

/** `hooks remove ID`. */
export async function runHooksRemove(ctx: AppContext, id: number): Promise<number> {
  const r = await removeSubscription({ db: ctx.db, client: ctx.client, config: ctx.config }, id);
  ctx.io.out(
    r.unsubscribedOnPlatform
      ? `removed subscription ${r.id} (${r.resource}) here and on the platform`
      : `removed subscription ${r.id} (${r.resource}) here; the platform has no documented way to drop it, so its callbacks are now refused (404)`,
  );
  return 0;
}
