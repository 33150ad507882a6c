/** `listsync hooks subscribe|list`: webhook subscriptions. */
import type { AppContext } from '../context.js';
import { table } from '../format.js';
import { listSubscriptions, subscribe, type SubscribeOptions } from '../webhooks/subscribe.js';
import { loadAppConfig } from '../context.js';
import { DEFAULT_HOOK_RESOURCE, callbackUrlFor, parseHookType } from '../webhooks/subscribe.js';
import type { CommandKit } from './kit.js';

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

export function register({ program, globals, withContext }: CommandKit): void {
  const hooks = program.command('hooks').description('webhook subscriptions: subscribe, list');
  hooks
    .command('subscribe')
    .description('create a webhook subscription on the platform (POST /hooks) with a secret callback URL served by "listsync serve"')
    .requiredOption('--channel <name>', 'channel name; the platform sends it back as the Channel header')
    .requiredOption('--type <n>', 'event type code: an integer the platform defines for the event kind (it publishes no list; ask its admin). Sent back as the Type header, which every callback must match')
    .option('--resource <resource>', 'subscribed resource', DEFAULT_HOOK_RESOURCE)
    .option('--callback-url <url>', 'public base URL the platform reaches serve at (default serve.publicUrl); /hooks/<token> is appended')
    .action((opts: { channel: string; type: string; resource: string; callbackUrl?: string }) => {
      const type = parseHookType(opts.type);
      callbackUrlFor(loadAppConfig(globals()), 'check', opts.callbackUrl);
      return withContext((ctx) => runHooksSubscribe(ctx, { channel: opts.channel, type, resource: opts.resource, callbackUrl: opts.callbackUrl }));
    });
  hooks
    .command('list')
    .description('print the webhook subscriptions (tokens masked) with their event counts')
    .action(() => withContext((ctx) => runHooksList(ctx)));
}
