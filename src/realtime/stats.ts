/**
 * What the realtime applier did per list, for `status` and `/metrics`: read
 * from Postgres, so any process sees every process's work.
 */
import type { Config } from '../config.js';
import type { Knex } from '../db.js';
import { readRealtimeStats } from '../store/realtime-stats.js';
import { unappliedItemEventAges } from '../store/webhook-inbox.js';
import { itemEventCounts, listsWithItemSubscriptions } from '../store/webhook-subscriptions.js';

export interface RealtimeStatus {
  list: string;
  /** Item events stored (not duplicates) for the list's subscriptions. */
  received: number;
  /** Stored events not applied yet. */
  queued: number;
  applied: number;
  /** Item IDs re-read through the API, and the requests that took. */
  reread: number;
  rereadRequests: number;
  fromBody: number;
  deletesMarked: number;
  lastAppliedAt: Date | null;
  /** Seconds from receiving the latest applied event to applying it. */
  lastLagSeconds: number | null;
  /** Age of the oldest event not applied yet (0: none waits). */
  oldestUnappliedSeconds: number;
  /** Events not applied yet whose apply failed at least once, and the latest error. */
  failing: number;
  lastFailure: string | null;
  /** The last gap (callbacks refused, or the process down) and when its catch-up pull succeeded (null: not yet). */
  lastGapAt: Date | null;
  lastGapReason: string | null;
  caughtUpAt: Date | null;
}

export async function realtimeStatuses(db: Knex, config: Config): Promise<RealtimeStatus[]> {
  const names = config.lists.filter((l) => l.realtime).map((l) => l.name);
  for (const name of await listsWithItemSubscriptions(db))
    if (!names.includes(name) && config.lists.some((l) => l.name === name)) names.push(name);
  if (names.length === 0) return [];
  const counts = await itemEventCounts(db, names);
  const stats = await readRealtimeStats(db, names);
  const waiting = await unappliedItemEventAges(db);
  return names.map((name) => {
    const c = counts.find((x) => x.list_name === name);
    const s = stats.find((x) => x.list_name === name);
    const w = waiting.find((x) => x.list_name === name);
    return {
      list: name,
      received: Number(c?.received ?? 0),
      queued: Number(c?.queued ?? 0),
      applied: Number(s?.events_applied ?? 0),
      reread: Number(s?.items_reread ?? 0),
      rereadRequests: Number(s?.reread_requests ?? 0),
      fromBody: Number(s?.applied_from_body ?? 0),
      deletesMarked: Number(s?.deletes_marked ?? 0),
      lastAppliedAt: s?.last_applied_at ?? null,
      lastLagSeconds: s?.last_lag_ms === null || s?.last_lag_ms === undefined ? null : s.last_lag_ms / 1000,
      oldestUnappliedSeconds: w?.oldest_seconds ?? 0,
      failing: w?.failing ?? 0,
      lastFailure: w?.last_error ?? null,
      lastGapAt: s?.last_gap_at ?? null,
      lastGapReason: s?.last_gap_reason ?? null,
      caughtUpAt: s?.caught_up_at ?? null,
    };
  });
}
