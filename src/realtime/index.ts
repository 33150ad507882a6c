/**
 * Real time for `serve`: at start, each list with `realtime` gets its item
 * event subscriptions (reused when stored); stored events a previous process
 * did not apply are replayed; item events from the receiver go to the
 * applier; /healthz is degraded while a realtime list lacks a subscription,
 * or an item event waits unapplied longer than serve.realtimeStaleAfterSeconds.
 * After a gap (callbacks refused, or at start: the process was down) an
 * incremental pull catches the list up (catch-up.ts).
 */
import type { Config } from '../config.js';
import type { Knex } from '../db.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { unappliedItemEventAges } from '../store/webhook-inbox.js';
import type { ItemEvent } from '../webhooks/receiver.js';
import { RealtimeApplier, type ApplierOptions } from './applier.js';
import { listLockFree, type BacklogPuller } from './backlog-pull.js';
import { CatchUp, type CatchUpOptions } from './catch-up.js';
import { ensureItemSubscriptions, listsMissingSubscriptions, removeRetiredSubscriptions } from './subscriptions.js';

export { RealtimeApplier, type ApplierOptions } from './applier.js';
export { BACKLOG_PULL_EVENTS, REREAD_BATCH, type BacklogPuller } from './backlog-pull.js';
export type { FlushResult } from './flush.js';
export {
  ensureItemSubscriptions,
  listsMissingSubscriptions,
  removeSubscription,
  removeRetiredSubscriptions,
  itemResource,
  ITEM_EVENT,
  REALTIME_CHANNEL,
  REALTIME_EVENT_TYPES,
  type ItemSubscription,
} from './subscriptions.js';
export { realtimeStatuses, type RealtimeStatus } from './stats.js';

export interface Realtime {
  applier: RealtimeApplier;
  /**
   * For the receiver's `onItemEvent`: an event of a list's item subscription
   * is queued for the applier ('deferred': it marks the event processed once
   * applied); any other goes to `other` (the early pull).
   */
  onItemEvent(event: ItemEvent): 'deferred' | undefined;
  health(): Promise<{ degraded: boolean; realtime: RealtimeHealth }>;
  /** The list may have missed item events (a callback refused): an incremental pull catches it up. */
  gap(listName: string, reason: string): void;
  close(): Promise<void>;
}

export interface RealtimeHealth {
  missingSubscriptions: string[];
  /** Per list with item events not applied yet: how many, the oldest one's age, those that failed and the latest error. */
  waiting: { list: string; events: number; oldestSeconds: number; failing: number; lastError: string | null; stale: boolean }[];
}

export interface RealtimeOptions extends Omit<ApplierOptions, 'db' | 'client' | 'config' | 'logger'> {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
  /** Base URL for the callbacks instead of serve.publicUrl (tests: serve on a random port). */
  callbackBase?: string;
  /**
   * Catch every real-time list up with an incremental pull at start (`serve`: the process was down, so
   * callbacks may have been refused or lost meanwhile). Default false.
   */
  catchUpAtStart?: boolean;
  /** Catch-up pulls' retry timings (tests). */
  catchUpRetryDelayMs?: number;
  /** How catch-up and backlog pulls run (serve: through its job queue); default directly. */
  runPull?: CatchUpOptions['runPull'];
  /** Whether `runPull` would start a run at once (serve: a worker free, nothing queued); default yes. */
  pullSlotFree?: () => boolean;
}

/** Removes the subscriptions listsync replaced on the platform; one that fails stays for the next start. */
async function removeRetired(deps: Parameters<typeof removeRetiredSubscriptions>[0], log: Logger): Promise<void> {
  try {
    for (const r of await removeRetiredSubscriptions(deps)) {
      if (r.outcome === 'removed')
        log.info({ resource: r.resource, platformId: r.platformId }, 'replaced item subscription removed from the platform');
      else
        log.warn(
          { resource: r.resource, platformId: r.platformId, error: r.error },
          'could not remove a replaced item subscription from the platform; tried again at the next start',
        );
    }
  } catch (err) {
    log.warn({ err: coerceError(err) }, 'could not remove replaced item subscriptions; tried again at the next start');
  }
}

/** Subscribes the realtime lists (once), replays unapplied events and returns the applier's hooks. */
export async function startRealtime(opts: RealtimeOptions): Promise<Realtime> {
  const { db, client, config, logger } = opts;
  const log = logger.child({ component: 'realtime' });
  const catchUp = new CatchUp({ db, client, config, logger, retryDelayMs: opts.catchUpRetryDelayMs, runPull: opts.runPull });
  const backlogPuller: BacklogPuller = {
    canStart: async (name) => (opts.pullSlotFree?.() ?? true) && (await listLockFree(db, name)),
    run: (name) => catchUp.pullOnce(name),
  };
  const applier = new RealtimeApplier({ backlogPuller, ...opts });
  await removeRetired({ db, client, config }, log);
  for (const list of config.lists.filter((l) => l.realtime)) {
    try {
      const subs = await ensureItemSubscriptions(
        { db, client, config },
        list,
        opts.callbackBase === undefined ? {} : { callbackUrl: opts.callbackBase },
      );
      log.info(
        { list: list.name, subscriptions: subs.map((s) => ({ id: s.id, type: s.type, outcome: s.outcome })) },
        'item event subscriptions in place',
      );
    } catch (err) {
      // serve still runs (the scheduled pull keeps the mirror fresh); /healthz reports it degraded.
      log.error(
        { list: list.name, err: coerceError(err) },
        "could not subscribe the list's item events; realtime is off for it until the next start",
      );
    }
  }
  const replayed = await applier.replay();
  if (replayed) log.info({ events: replayed }, 'item events stored but not applied by a previous run: applying them now');
  if (opts.catchUpAtStart) for (const list of config.lists.filter((l) => l.realtime)) catchUp.request(list.name, 'start');
  return {
    applier,
    onItemEvent(event) {
      if (!event.resource.startsWith('lists/')) return undefined;
      const list = applier.listForResource(event.resource);
      if (!list) {
        log.warn({ resource: event.resource, inboxId: event.inboxId }, 'an item event for a list not in the config: stored, not applied');
        return undefined;
      }
      applier.enqueue(list.name, event.inboxId);
      return 'deferred';
    },
    async health() {
      const missing = await listsMissingSubscriptions(db, config);
      const limit = config.serve.realtimeStaleAfterSeconds;
      const waiting = (await unappliedItemEventAges(db))
        .filter((w) => config.lists.some((l) => l.name === w.list_name))
        .map((w) => ({
          list: w.list_name,
          events: w.unapplied,
          oldestSeconds: Math.round(w.oldest_seconds * 10) / 10,
          failing: w.failing,
          lastError: w.last_error,
          stale: w.oldest_seconds > limit,
        }));
      const degraded = missing.length > 0 || waiting.some((w) => w.stale);
      return { degraded, realtime: { missingSubscriptions: missing, waiting } };
    },
    gap(listName, reason) {
      if (config.lists.some((l) => l.name === listName && l.realtime)) catchUp.request(listName, reason);
    },
    close: async () => {
      await catchUp.close();
      await applier.close();
    },
  };
}
