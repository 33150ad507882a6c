/**
 * `listsync.rate_budget`: per platform account, the next free request slot
 * and a pause, shared by every process that uses the account. Times are the
 * database's clock; each statement also returns that clock (epoch ms) so the
 * caller can map it to its own.
 */
import type { Knex } from '../db.js';

export const RATE_BUDGET_TABLE = 'listsync.rate_budget';

/**
 * Reserves `spanSeconds` of slots starting no earlier than `leadSeconds` from
 * now, after any earlier reservation and any pause; returns where the
 * reservation ends, and who made the reservation before this one and how
 * long ago (ms; null when the account had none).
 */
export async function reserveSlots(
  db: Knex,
  account: string,
  leadSeconds: number,
  spanSeconds: number,
  holder: string,
): Promise<{ next_ms: number; now_ms: number; previous_holder: string | null; previous_age_ms: number | null } | undefined> {
  const result = await db.raw<{
    rows: { next_ms: number; now_ms: number; previous_holder: string | null; previous_age_ms: number | null }[];
  }>(
    `insert into ${RATE_BUDGET_TABLE} as b (account, next_slot, updated_at, last_holder)
       values (?, clock_timestamp() + make_interval(secs => ?) + make_interval(secs => ?), clock_timestamp(), ?)
     on conflict (account) do update
       set next_slot = greatest(b.next_slot, clock_timestamp() + make_interval(secs => ?), coalesce(b.paused_until, '-infinity'::timestamptz))
                       + make_interval(secs => ?),
           prior_holder = b.last_holder,
           prior_at = b.updated_at,
           updated_at = clock_timestamp(),
           last_holder = excluded.last_holder
     returning extract(epoch from next_slot)::float8 * 1000 as next_ms,
               extract(epoch from clock_timestamp())::float8 * 1000 as now_ms,
               prior_holder as previous_holder,
               extract(epoch from clock_timestamp() - prior_at)::float8 * 1000 as previous_age_ms`,
    [account, leadSeconds, spanSeconds, holder, leadSeconds, spanSeconds],
  );
  return result.rows[0];
}

/** Pauses the account for `seconds` from now (a longer pause already set is kept). */
export async function pauseAccount(db: Knex, account: string, seconds: number): Promise<void> {
  await db.raw(
    `insert into ${RATE_BUDGET_TABLE} as b (account, next_slot, paused_until, updated_at)
       values (?, clock_timestamp(), clock_timestamp() + make_interval(secs => ?), clock_timestamp())
     on conflict (account) do update
       set paused_until = greatest(coalesce(b.paused_until, '-infinity'::timestamptz), excluded.paused_until),
           updated_at = clock_timestamp()`,
    [account, seconds],
  );
}

/** The account's pause end (null: never paused) and the database's clock; undefined when the account has no row. */
export async function readPause(db: Knex, account: string): Promise<{ until_ms: number | null; now_ms: number } | undefined> {
  return (
    await db.raw<{ rows: { until_ms: number | null; now_ms: number }[] }>(
      `select extract(epoch from paused_until)::float8 * 1000 as until_ms,
              extract(epoch from clock_timestamp())::float8 * 1000 as now_ms
         from ${RATE_BUDGET_TABLE} where account = ?`,
      [account],
    )
  ).rows[0];
}
