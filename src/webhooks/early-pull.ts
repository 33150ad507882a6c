/**
 * Which lists an item event pulls early. The subscribed resource
 * (`workflow/tasks`) is not tied to a list in the config, and a callback body
 * names an item ID but not its list, so an item event asks for an early pull
 * of every list that has a pull schedule (the lists `serve` keeps fresh); when
 * no list has one, of every configured list. Requests for a list whose pull
 * is already running are coalesced into one more pull after it.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { ItemEvent } from './receiver.js';

export function listsToPullFor(config: Config, _event?: Pick<ItemEvent, 'resource'>): readonly ListConfig[] {
  const scheduled = config.lists.filter((l) => l.schedule.pull !== undefined);
  return scheduled.length ? scheduled : config.lists;
}

/** An `onItemEvent` for the receiver that calls `requestPull` for those lists. */
export function earlyPullOnItemEvent(config: Config, requestPull: (list: string) => void): (event: ItemEvent) => void {
  return (event) => {
    for (const list of listsToPullFor(config, event)) requestPull(list.name);
  };
}

/**
 * Item events stored by a process that stopped before acting on them: at start, serve asks for
 * the early pull they were owed (once for all of them) and marks them processed. A list's own item
 * event subscriptions (realtime) are not theirs: the realtime applier replays those.
 */
export async function replayUnprocessedEvents(db: Knex, config: Config, requestPull: (list: string) => void): Promise<number> {
  const ids = (await db('listsync.webhook_inbox as i')
    .join('listsync.webhook_subscriptions as s', 's.id', 'i.subscription_id')
    .whereNull('i.processed_at')
    .whereNull('s.list_name')
    .pluck('i.id')) as number[];
  if (ids.length === 0) return 0;
  for (const list of listsToPullFor(config)) requestPull(list.name);
  await db('listsync.webhook_inbox').whereIn('id', ids).update({ processed_at: db.fn.now() });
  return ids.length;
}
