/**
 * What the realtime applier did per list, for `status` and `/metrics`: read
 * from Postgres, so any process sees every process's work.
 */
import type { Config } from '../config.js';
import type { Knex } from '../db.js';

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
}

export async function realtimeStatuses(db: Knex, config: Config): Promise<RealtimeStatus[]> {
  const names = config.lists.filter((l) => l.realtime).map((l) => l.name);
  const withSubs = (await db('listsync.webhook_subscriptions').whereNotNull('list_name').distinct('list_name')) as { list_name: string }[];
  for (const r of withSubs) if (!names.includes(r.list_name) && config.lists.some((l) => l.name === r.list_name)) names.push(r.list_name);
  if (names.length === 0) return [];
  const counts = (await db('listsync.webhook_subscriptions as s')
    .leftJoin('listsync.webhook_inbox as i', 'i.subscription_id', 's.id')
    .whereIn('s.list_name', names)
    .groupBy('s.list_name')
    .select('s.list_name', db.raw('count(i.id)::bigint as received'), db.raw('count(i.id) filter (where i.processed_at is null)::bigint as queued'))) as {
    list_name: string;
    received: string;
    queued: string;
  }[];
  const stats = (await db('listsync.realtime_stats').whereIn('list_name', names).select()) as {
    list_name: string;
    events_applied: string;
    items_reread: string;
    reread_requests: string;
    applied_from_body: string;
    deletes_marked: string;
    last_applied_at: Date | null;
    last_lag_ms: number | null;
  }[];
  return names.map((name) => {
    const c = counts.find((x) => x.list_name === name);
    const s = stats.find((x) => x.list_name === name);
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
    };
  });
}
