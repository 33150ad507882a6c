/**
 * `listsync.rate_budget`: per platform account, the sliding log of request
 * slots handed out and a pause, shared by every process that uses the account. Times are the
 * database's clock; each statement also returns that clock (epoch ms) so the
 * caller can map it to its own.
 */
import type { Knex } from '../db.js';

export const RATE_BUDGET_TABLE = 'listsync.rate_budget';

/**
 * Reserves `count` slots in the account's sliding log (migration
 * 20261127000000_rate_budget_window): each no earlier than `leadMs` from now,
 * any pause and the last slot handed out, `windowMs` after the slot `cap`
 * slots before it and `burstWindowMs` after the one `burst` slots before it. Returns the slots (database epoch ms), the database's
 * clock, and who made the reservation before this one and how long ago (ms;
 * null when the account had none).
 */
export async function reserveSlots(
  db: Knex,
  account: string,
  window: { leadMs: number; windowMs: number; cap: number; burstWindowMs: number; burst: number; count: number },
  holder: string,
): Promise<{ slots_ms: number[]; now_ms: number; previous_holder: string | null; previous_age_ms: number | null } | undefined> {
  const result = await db.raw<{
    rows: { slots_ms: number[]; now_ms: number; previous_holder: string | null; previous_age_ms: number | null }[];
  }>(`select * from listsync.reserve_rate_slots(?, ?, ?, ?, ?, ?, ?, ?)`, [
    account,
    window.leadMs,
    window.windowMs,
    window.cap,
    window.burstWindowMs,
    window.burst,
    window.count,
    holder,
  ]);
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
