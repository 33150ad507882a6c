/**
 * A list's queued events taken for a flush, and given back. Events stay
 * unprocessed in `listsync.webhook_inbox` until the flush that applies them
 * marks them processed (flush.ts), so a stop at any point replays them at the
 * next start. A claim that fails stays queued in memory and unprocessed in the
 * inbox, with its attempts and last error; a list with no mirror table yet
 * gives its events to the first pull, which reads every item.
 */
import type { Knex } from '../db.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { markProcessed, recordEventFailure, unprocessedEvents } from '../store/webhook-inbox.js';
import { REREAD_BATCH } from './backlog-pull.js';
import { mergeClaims, type Claim, type ClaimFields, type EventRow } from './claim-merge.js';
import type { ListSchedule } from './schedule.js';

/** Queued events one flush takes at most: two `In` queries' worth; the rest follow in the next flushes. */
export const FLUSH_EVENTS = 2 * REREAD_BATCH;

export interface Claimed {
  /** The stored events taken. */
  rows: EventRow[];
  /** New claims (and the re-checks), merged per item; those of items waiting for a retry joined them. */
  fresh: Map<string, Claim>;
}

/** Takes up to FLUSH_EVENTS queued events and the re-checks off the list's queue, merged per item. */
export async function claimQueued(db: Knex, s: ListSchedule, fields: ClaimFields): Promise<Claimed> {
  const inboxIds = [...s.inbox].slice(0, FLUSH_EVENTS);
  const rows = inboxIds.length ? await unprocessedEvents(db, inboxIds) : [];
  const fresh = mergeClaims(rows, [...s.rechecks.values()], fields, new Date());
  for (const id of inboxIds) s.inbox.delete(id);
  s.rechecks.clear();
  s.holdWithRetries(fresh);
  return { rows, fresh };
}

/**
 * The list has no mirror yet: its queued events (a flush's worth) and every waiting claim are left to
 * the first pull, asked by `askPull` with their count before they are marked processed.
 */
export async function releaseToPull(db: Knex, s: ListSchedule, askPull: (events: number) => void): Promise<void> {
  const inboxIds = [...s.inbox].slice(0, FLUSH_EVENTS);
  const all = [...inboxIds, ...[...s.retry.values()].flatMap((c) => c.inboxIds)];
  askPull(all.length);
  await markProcessed(db, all);
  for (const id of inboxIds) s.inbox.delete(id);
  s.rechecks.clear();
  s.retry.clear();
}

/** The claims' events stay unprocessed: counted and their error recorded in the inbox, retried after a backoff. */
export async function markFailed(deps: { db: Knex; log: Logger }, s: ListSchedule, claims: readonly Claim[], err: Error): Promise<void> {
  s.failed(claims);
  const inboxIds = claims.flatMap((c) => c.inboxIds);
  deps.log.warn(
    { list: s.list.name, items: claims.length, events: inboxIds.length, attempts: Math.max(...claims.map((c) => c.attempts)), err },
    'item events could not be applied; they stay queued and are tried again',
  );
  try {
    await recordEventFailure(deps.db, inboxIds, err.message);
  } catch (recordErr) {
    // The database is failing too: the events are still unprocessed there, and queued here.
    deps.log.warn({ list: s.list.name, err: coerceError(recordErr) }, 'could not record the failure of item events');
  }
}
