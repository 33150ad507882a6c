/**
 * `listsync.rate_budget`: per platform account, the sliding log of request
 * slots handed out and a pause, shared by every process that uses the account,
 * and what the limiter learned from 429 answers (migration
 * 20261128000400_rate_budget_learned; src/platform/learned-limits.ts). Times are the
 * database's clock; each statement also returns that clock (epoch ms) so the
 * caller can map it to its own.
 */
import type { Knex } from '../db.js';
import { type LearnedLimits, relaxed } from '../platform/learned-limits.js';

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

const LEARNED_COLUMNS = `bursts_allowed, margin_ms, throttled_total::float8 as throttled_total,
  extract(epoch from last_throttled_at)::float8 * 1000 as last_throttled_ms,
  extract(epoch from limit_too_high_at)::float8 * 1000 as limit_too_high_ms,
  extract(epoch from clock_timestamp())::float8 * 1000 as now_ms`;

interface LearnedRow {
  bursts_allowed: boolean;
  margin_ms: number;
  throttled_total: number;
  last_throttled_ms: number | null;
  limit_too_high_ms: number | null;
  now_ms: number;
}

/** A row's learned state, its times in database epoch ms. */
function learnedOf(row: LearnedRow): LearnedLimits {
  return {
    burstsAllowed: row.bursts_allowed,
    marginMs: Number(row.margin_ms),
    throttledTotal: Number(row.throttled_total),
    lastThrottledAt: row.last_throttled_ms === null ? null : Number(row.last_throttled_ms),
    limitTooHighAt: row.limit_too_high_ms === null ? null : Number(row.limit_too_high_ms),
  };
}

/** What the account's limiter learned (database epoch ms) and the database's clock; undefined when the account has no row. */
export async function readLearned(db: Knex, account: string): Promise<{ learned: LearnedLimits; nowMs: number } | undefined> {
  const row = (await db.raw<{ rows: LearnedRow[] }>(`select ${LEARNED_COLUMNS} from ${RATE_BUDGET_TABLE} where account = ?`, [account]))
    .rows[0];
  return row ? { learned: learnedOf(row), nowMs: Number(row.now_ms) } : undefined;
}

/**
 * Records a 429 in one transaction, the account's row locked: `update` turns
 * what the account had learned (database epoch ms, given with the database's
 * clock) into the new state, which is stored with a pause of `pauseSeconds`
 * from now (a longer pause already set is kept). Returns the new state.
 */
export async function recordThrottle(
  db: Knex,
  account: string,
  pauseSeconds: number,
  update: (current: LearnedLimits, nowMs: number) => LearnedLimits,
): Promise<LearnedLimits> {
  return db.transaction(async (trx) => {
    await trx.raw(
      `insert into ${RATE_BUDGET_TABLE} (account, next_slot, updated_at) values (?, '-infinity', clock_timestamp())
         on conflict (account) do nothing`,
      [account],
    );
    const row = (
      await trx.raw<{ rows: LearnedRow[] }>(`select ${LEARNED_COLUMNS} from ${RATE_BUDGET_TABLE} where account = ? for update`, [account])
    ).rows[0]!;
    const next = update(learnedOf(row), Number(row.now_ms));
    await trx.raw(
      `update ${RATE_BUDGET_TABLE}
          set bursts_allowed = ?, margin_ms = ?, throttled_total = ?,
              last_throttled_at = to_timestamp(?::float8 / 1000), limit_too_high_at = to_timestamp(?::float8 / 1000),
              paused_until = greatest(coalesce(paused_until, '-infinity'::timestamptz),
                                      clock_timestamp() + make_interval(secs => ?))
        where account = ?`,
      [
        next.burstsAllowed,
        Math.round(next.marginMs),
        next.throttledTotal,
        next.lastThrottledAt,
        next.limitTooHighAt,
        Math.max(0, pauseSeconds),
        account,
      ],
    );
    return next;
  });
}

/** One account's limiter state, as `status`, `/metrics` and the console show it. */
export interface LimiterState {
  account: string;
  burstsAllowed: boolean;
  marginMs: number;
  throttledTotal: number;
  lastThrottledAt: Date | null;
  /** When 429s kept coming at the widened margin and the rate was halved: the configured limit looks too high. */
  limitTooHighAt: Date | null;
  pausedUntil: Date | null;
}

/**
 * Every account's limiter state as a process starting now would take it
 * (margin and bursts relaxed by the time since the last 429), by account.
 */
export async function readLimiterState(db: Knex): Promise<LimiterState[]> {
  const rows = (
    await db.raw<{
      rows: {
        account: string;
        bursts_allowed: boolean;
        margin_ms: number;
        throttled_total: string | number;
        last_throttled_at: Date | null;
        limit_too_high_at: Date | null;
        paused_until: Date | null;
        now_ms: number;
      }[];
    }>(
      `select account, bursts_allowed, margin_ms, throttled_total, last_throttled_at, limit_too_high_at,
              case when paused_until > clock_timestamp() then paused_until end as paused_until,
              extract(epoch from clock_timestamp())::float8 * 1000 as now_ms
         from ${RATE_BUDGET_TABLE} order by account`,
    )
  ).rows;
  return rows.map((r) => {
    const now = relaxed(
      {
        burstsAllowed: r.bursts_allowed,
        marginMs: Number(r.margin_ms),
        throttledTotal: Number(r.throttled_total),
        lastThrottledAt: r.last_throttled_at?.getTime() ?? null,
        limitTooHighAt: r.limit_too_high_at?.getTime() ?? null,
      },
      Number(r.now_ms),
    );
    return {
      account: r.account,
      burstsAllowed: now.burstsAllowed,
      marginMs: now.marginMs,
      throttledTotal: now.throttledTotal,
      lastThrottledAt: r.last_throttled_at,
      limitTooHighAt: r.limit_too_high_at,
      pausedUntil: r.paused_until,
    };
  });
}
