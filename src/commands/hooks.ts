/** `listsync hooks subscribe|list`: webhook subscriptions. */
import type { AppContext } from '../context.js';
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
      ['id', 'platform id', 'resource', 'channel', 'type', 'callback URL', 'events', 'last event', 'created'],
      subs.map((s) => [s.id, s.platformId, s.resource, s.channel, s.type, s.maskedCallbackUrl, s.events, s.lastEventAt, s.createdAt]),
    ),
  );
  return 0;
}
