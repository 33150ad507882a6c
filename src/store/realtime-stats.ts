/**
 * `listsync.realtime_stats`: per list, what the realtime applier did (events
 * applied, re-reads, the latest event's lag), so `status` and `/metrics` of
 * any process see every process's work.
 */
import type { Knex } from '../db.js';

export const REALTIME_STATS_TABLE = 'listsync.realtime_stats';

export interface RealtimeStatsRow {
  list_name: string;
  events_applied: string;
  items_reread: string;
  reread_requests: string;
  applied_from_body: string;
  deletes_marked: string;
  last_applied_at: Date | null;
  last_lag_ms: number | null;
  last_gap_at: Date | null;
  last_gap_reason: string | null;
  caught_up_at: Date | null;
}

/** One flush's work, added to the list's totals. */
export interface FlushTally {
  applied: number;
  reread: number;
  requests: number;
  fromBody: number;
  deleted: number;
  /** When the newest event of the flush was received (its lag is measured to now); null: none. */
  newestReceivedAt: Date | null;
}

export async function addFlush(trx: Knex | Knex.Transaction, listName: string, t: FlushTally): Promise<void> {
  const newest = t.newestReceivedAt;
  await trx.raw(
    `insert into ${REALTIME_STATS_TABLE} as s (list_name, events_applied, items_reread, reread_requests, applied_from_body, deletes_marked, last_applied_at, last_received_at, last_lag_ms, updated_at)
     values (?, ?, ?, ?, ?, ?, case when ? then now() end, ?::timestamptz, case when ?::timestamptz is not null then (extract(epoch from now() - ?::timestamptz) * 1000)::int end, now())
     on conflict (list_name) do update set
       events_applied = s.events_applied + excluded.events_applied,
       items_reread = s.items_reread + excluded.items_reread,
       reread_requests = s.reread_requests + excluded.reread_requests,
       applied_from_body = s.applied_from_body + excluded.applied_from_body,
       deletes_marked = s.deletes_marked + excluded.deletes_marked,
       last_applied_at = coalesce(excluded.last_applied_at, s.last_applied_at),
       last_received_at = coalesce(excluded.last_received_at, s.last_received_at),
       last_lag_ms = coalesce(excluded.last_lag_ms, s.last_lag_ms),
       updated_at = now()`,
    [listName, t.applied, t.reread, t.requests, t.fromBody, t.deleted, t.applied > 0, newest, newest, newest],
  );
}

export async function readRealtimeStats(db: Knex, names: readonly string[]): Promise<RealtimeStatsRow[]> {
  return (await db(REALTIME_STATS_TABLE)
    .whereIn('list_name', [...names])
    .select()) as RealtimeStatsRow[];
}

/**
 * A gap of a real-time list and, once its catch-up pull succeeded, when (null: not yet). Written when
 * the database answers: a gap seen while it was away is recorded with the catch-up that follows it.
 */
export async function recordGap(db: Knex, listName: string, gap: { at: Date; reason: string; caughtUpAt: Date | null }): Promise<void> {
  await db.raw(
    `insert into ${REALTIME_STATS_TABLE} as s (list_name, last_gap_at, last_gap_reason, caught_up_at, updated_at)
     values (?, ?, ?, ?, now())
     on conflict (list_name) do update set
       last_gap_at = excluded.last_gap_at, last_gap_reason = excluded.last_gap_reason, caught_up_at = excluded.caught_up_at, updated_at = now()`,
    [listName, gap.at, gap.reason, gap.caughtUpAt],
  );
}
