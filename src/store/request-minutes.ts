/**
 * Owner of `listsync.request_minutes`: platform requests per account, minute
 * and source, added to by every process (src/request-minutes-writer.ts) and
 * read by the console's budget page.
 *
 * Invariant: `addRequestMinutes` adds (never sets), in one statement, so two
 * processes counting the same minute both count and a batch either lands
 * whole or not at all.
 */
import type { Knex } from '../db.js';

export const REQUEST_MINUTES_TABLE = 'listsync.request_minutes';

export interface RequestMinute {
  account: string;
  minute: Date;
  source: string;
  requests: number;
  retries: number;
}

/** Adds each row's counts to its (account, minute, source) row, creating it when new. */
export async function addRequestMinutes(db: Knex, rows: readonly RequestMinute[]): Promise<void> {
  if (rows.length === 0) return;
  await db.raw(
    `insert into ${REQUEST_MINUTES_TABLE} (account, minute, source, requests, retries)
     select * from unnest(?::text[], ?::timestamptz[], ?::text[], ?::bigint[], ?::bigint[])
     on conflict (account, minute, source) do update
       set requests = ${REQUEST_MINUTES_TABLE}.requests + excluded.requests,
           retries = ${REQUEST_MINUTES_TABLE}.retries + excluded.retries`,
    [
      rows.map((r) => r.account),
      rows.map((r) => r.minute.toISOString()),
      rows.map((r) => r.source),
      rows.map((r) => r.requests),
      rows.map((r) => r.retries),
    ],
  );
}

export interface SourceRequests {
  account: string;
  source: string;
  requests: number;
  retries: number;
}

/** Requests and retries per account and source in the last `minutes` (the minute under way included), busiest first. */
export async function requestsBySource(db: Knex, minutes: number): Promise<SourceRequests[]> {
  const r = await db.raw<{ rows: { account: string; source: string; requests: string; retries: string }[] }>(
    `select account, source, sum(requests) as requests, sum(retries) as retries
       from ${REQUEST_MINUTES_TABLE}
      where minute > date_trunc('minute', now()) - make_interval(mins => ?)
      group by account, source order by account, 3 desc, source`,
    [minutes],
  );
  return r.rows.map((x) => ({ account: x.account, source: x.source, requests: Number(x.requests), retries: Number(x.retries) }));
}

/** Removes the minutes older than `days`, in one statement (a row per account, minute and source stays small). */
export async function pruneRequestMinutes(db: Knex, days: number): Promise<number> {
  const r = await db.raw<{ rowCount: number }>(`delete from ${REQUEST_MINUTES_TABLE} where minute < now() - make_interval(days => ?)`, [
    days,
  ]);
  return r.rowCount ?? 0;
}

export interface HourRequests {
  account: string;
  hour: Date;
  source: string;
  requests: number;
  retries: number;
}

/** Requests and retries per account, hour and source over the last `hours` (the hour under way included), oldest first. */
export async function requestsPerHour(db: Knex, hours: number): Promise<HourRequests[]> {
  const r = await db.raw<{ rows: { account: string; hour: Date; source: string; requests: string; retries: string }[] }>(
    `select account, date_trunc('hour', minute) as hour, source, sum(requests) as requests, sum(retries) as retries
       from ${REQUEST_MINUTES_TABLE}
      where minute >= date_trunc('hour', now()) - make_interval(hours => ?)
      group by 1, 2, 3 order by 2, 1, 3`,
    [hours - 1],
  );
  return r.rows.map((x) => ({ ...x, hour: new Date(x.hour), requests: Number(x.requests), retries: Number(x.retries) }));
}
