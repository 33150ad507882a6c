/** `listsync hooks subscribe|list|remove`: webhook subscriptions (workflow tasks and list item events). */
import type { ListConfig } from '../config.js';
import { configForList } from '../accounts.js';
import type { AppContext } from '../context.js';
import { ensureItemSubscriptions, removeSubscription } from '../realtime/subscriptions.js';
import { table } from '../format.js';
import {
  DEFAULT_HOOK_RESOURCE,
  callbackUrlFor,
  listSubscriptions,
  parseHookType,
  subscribe,
  type SubscribeOptions,
} from '../webhooks/subscribe.js';
import { loadAppConfig } from '../context.js';
import { UsageError } from '../errors.js';
import { selectLists } from './pull-command.js';
import type { CommandKit } from './command-kit.js';
import { LIST_FLAGS } from './options.js';

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
      subs.map((s) => [
        s.id,
        s.platformId,
        s.resource,
        s.channel,
        s.type,
        s.maskedCallbackUrl,
        s.events,
        s.lastEventAt,
        s.createdAt,
        s.listName ?? '-',
      ]),
    ),
  );
  return 0;
}

const EVENT_NAMES: Record<number, string> = { 3: 'created or modified', 4: 'deleted' };

/** `hooks subscribe --list L`: the list's item event subscriptions (created-or-modified, deleted), reused when they exist. */
export async function runHooksSubscribeList(ctx: AppContext, list: ListConfig, options: { callbackUrl?: string }): Promise<number> {
  const subs = await ensureItemSubscriptions(
    { db: ctx.db, client: ctx.clientFor(list), config: configForList(ctx.config, list) },
    list,
    options,
  );
  const lines = subs.map(
    (s) =>
      `  ${EVENT_NAMES[s.type] ?? `type ${s.type}`}: listsync subscription ${s.id}, platform hook ${s.platformId ?? '-'} (${s.outcome === 'reused' ? 'already subscribed' : s.outcome})`,
  );
  ctx.io.out(
    [
      `item events of list ${list.name}:`,
      ...lines,
      '"listsync serve" applies them to the mirror; it must be reachable at serve.publicUrl.',
    ].join('\n'),
  );
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

export function register({ program, globals, withContext }: CommandKit): void {
  const hooks = program.command('hooks').description('webhook subscriptions: subscribe, list, remove');
  hooks
    .command('subscribe')
    .description(
      'with --list: subscribe the list\'s item events (created or modified, deleted) once, as serve does for lists with "realtime"; otherwise create a workflow subscription (POST /hooks). Callbacks go to a secret URL served by "listsync serve"',
    )
    .option(LIST_FLAGS, "subscribe this list's item events (reuses its subscriptions when they exist)")
    .option('--channel <name>', 'workflow subscriptions: channel name; the platform sends it back as the Channel header')
    .option(
      '--type <n>',
      'workflow subscriptions: event type code, an integer the platform defines for the event kind (it publishes no list; ask its admin). Sent back as the Type header, which every callback must match',
    )
    .option('--resource <resource>', 'workflow subscriptions: subscribed resource', DEFAULT_HOOK_RESOURCE)
    .option('--callback-url <url>', 'public base URL the platform reaches serve at (default serve.publicUrl); /hooks/<token> is appended')
    .action((opts: { list?: string; channel?: string; type?: string; resource: string; callbackUrl?: string }) => {
      callbackUrlFor(loadAppConfig(globals()), 'check', opts.callbackUrl);
      if (opts.list !== undefined) {
        const name = opts.list;
        return withContext((ctx) => runHooksSubscribeList(ctx, selectLists(ctx, name)[0]!, { callbackUrl: opts.callbackUrl }));
      }
      if (opts.channel === undefined || opts.type === undefined)
        throw new UsageError("hooks subscribe needs --list L (a list's item events) or --channel C --type N (a workflow subscription).");
      const type = parseHookType(opts.type);
      const channel = opts.channel;
      return withContext((ctx) => runHooksSubscribe(ctx, { channel, type, resource: opts.resource, callbackUrl: opts.callbackUrl }));
    });
  hooks
    .command('remove <id>')
    .description('remove a subscription (the id "hooks list" shows): here, and on the platform for a list\'s item events')
    .action((id: string) => {
      if (!/^\d{1,18}$/.test(id))
        throw new UsageError(`hooks remove takes the subscription id "listsync hooks list" shows (got ${JSON.stringify(id)}).`);
      return withContext((ctx) => runHooksRemove(ctx, Number(id)));
    });
  hooks
    .command('list')
    .description('print the webhook subscriptions (tokens masked) with their event counts')
    .action(() => withContext((ctx) => runHooksList(ctx)));
}
