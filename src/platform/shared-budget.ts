/**
 * The account's request budget, shared through Postgres by every process that
 * uses the same account (table `listsync.rate_budget`).
 *
 * One row per account holds the sliding log of the last slots handed out
 * (`recent_slots_ms`, as many as the limit), the last slot (`next_slot`) and
 * `paused_until`, set after a rate-limit answer. A reservation
 * (`listsync.reserve_rate_slots`, row-locked) hands out slots in order, each
 *
 *   slot = greatest(now + lead, paused_until, previous slot,
 *                   slot[-cap] + window, slot[-burst] + burst window)
 *
 * so a burst goes together and no window holds more than the limit,
 * whichever processes the slots went to (`lead`, about one round trip, lets an
 * idle budget's first slot still lie ahead when the answer arrives). Database
 * time is mapped to local time through an offset measured on each call
 * (midpoint of the round trip, preferring recent samples with short round
 * trips); the limiter's margin absorbs the remaining error of a few
 * milliseconds.
 *
 * The row also keeps what the limiter learned from 429 answers (bursts on or
 * off, the extra margin, 429s counted: src/platform/learned-limits.ts), read
 * when a limiter starts and written, row-locked, with each 429's pause.
 *
 * The account key is `platform.account` when configured, otherwise a SHA-256
 * of baseUrl and apiKey: never the key itself.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { PlatformConfig } from '../config.js';
import { pauseAccount, readLearned, readPause, recordThrottle, reserveSlots } from '../store/rate-budget.js';
import { type Clock, systemClock } from './clock.js';
import type { LearnedLimits } from './learned-limits.js';
import type { SlotSource, SlotWindow } from './rate-limiter.js';

export interface SharedBudgetOptions {
  db: Knex;
  /** Account key; see `budgetAccount(config)`. */
  account: string;
  clock?: Clock;
  /**
   * The process can do without it (`check`, `discover`: the database may not be there yet): failing,
   * the limiter paces the process alone for the rest of its life, quietly.
   */
  optional?: boolean;
}

/** The key under which processes share a budget: `platform.account`, or a hash of baseUrl + apiKey. */
export function budgetAccount(config: Pick<PlatformConfig, 'account' | 'baseUrl' | 'apiKey'>): string {
  if (config.account) return config.account;
  const digest = createHash('sha256').update(config.baseUrl).update('\n').update(config.apiKey).digest('hex');
  return `sha256:${digest}`;
}

/** How long a reservation by another process counts as "the account is shared right now". */
const CONTENDED_FOR_MS = 10_000;

export class SharedBudget implements SlotSource {
  readonly account: string;
  readonly optional: boolean;
  private readonly db: Knex;
  private readonly clock: Clock;
  /** Database time minus local time. */
  private offsetMs = 0;
  /** The sample the offset comes from: its round trip and when it was taken (local ms). */
  private offsetRtt = Infinity;
  private offsetAt = -Infinity;
  /** Smoothed round trip, ms. */
  private rttEwma = 5;
  private reservations = 0;
  private last: { dbSlotsMs: number[] } | undefined;
  /** Tells this process's reservations apart from other processes'. */
  private readonly holder = randomUUID();
  private othersSeenAt = -Infinity;

  constructor(options: SharedBudgetOptions) {
    if (!options.account) throw new TypeError('SharedBudget needs an account key');
    this.db = options.db;
    this.account = options.account;
    this.optional = options.optional === true;
    this.clock = options.clock ?? systemClock;
  }

  /** The last reservation's slots in database time (epoch ms), for diagnostics. */
  get lastReservation(): { dbSlotsMs: number[] } | undefined {
    return this.last;
  }

  /**
   * Whether another process reserved slots of the account lately. While it
   * did, a slot this process cannot use on time is dropped: sent late, it
   * could crowd the other's next slots into one second.
   */
  get contended(): boolean {
    return this.clock.now() - this.othersSeenAt < CONTENDED_FOR_MS;
  }

  /** Database round trips made to reserve slots. */
  get roundTrips(): number {
    return this.reservations;
  }

  /** Last measured database-minus-local clock offset, in ms. */
  get clockOffsetMs(): number {
    return this.offsetMs;
  }

  async reserve(count: number, window: SlotWindow): Promise<number[]> {
    // When the budget is idle the first slot is "now" in database time, which
    // is already in the past when the answer arrives: ask for it a round trip
    // ahead so it can be used on time.
    const leadMs = Math.min(50, Math.max(1, this.rttEwma));
    const t0 = this.clock.now();
    const row = await reserveSlots(
      this.db,
      this.account,
      {
        leadMs,
        windowMs: window.windowMs,
        cap: Math.max(1, Math.floor(window.cap)),
        burstWindowMs: window.burstWindowMs ?? window.windowMs,
        burst: Math.max(1, Math.floor(window.burst ?? window.cap)),
        count: Math.max(1, Math.floor(count)),
      },
      this.holder,
    );
    const t1 = this.clock.now();
    this.reservations++;
    if (!row) throw new Error(`reserving request slots for account ${this.account} returned no row`);
    if (row.previous_holder !== null && row.previous_holder !== this.holder && Number(row.previous_age_ms) < CONTENDED_FOR_MS)
      this.othersSeenAt = t1;
    this.observeOffset(Number(row.now_ms) - (t0 + t1) / 2, t1 - t0, t1);
    const dbSlotsMs = row.slots_ms.map(Number);
    this.last = { dbSlotsMs };
    return dbSlotsMs.map((ms) => ms - this.offsetMs);
  }

  /**
   * Each round trip measures the offset (DB time at the midpoint of the round
   * trip); its error is at most half the round trip. A sample replaces the
   * current one when its round trip is not much longer, or the current one is
   * over 30 s old, so one slow call (a new connection, a lock wait) does not
   * shift the mapping.
   */
  private observeOffset(offset: number, rtt: number, at: number): void {
    this.rttEwma = this.rttEwma * 0.8 + rtt * 0.2;
    if (rtt <= this.offsetRtt * 1.5 + 1 || at - this.offsetAt > 30_000) {
      this.offsetMs = offset;
      this.offsetRtt = rtt;
      this.offsetAt = at;
    }
  }

  async pause(untilMs: number): Promise<void> {
    const seconds = Math.max(0, (untilMs - this.clock.now()) / 1000);
    await pauseAccount(this.db, this.account, seconds);
  }

  /** What the account's limiter learned, its times in local epoch ms; undefined when the account has no row yet. */
  async readLearned(): Promise<LearnedLimits | undefined> {
    const t0 = this.clock.now();
    const row = await readLearned(this.db, this.account);
    const t1 = this.clock.now();
    if (!row) return undefined;
    this.observeOffset(row.nowMs - (t0 + t1) / 2, t1 - t0, t1);
    return this.toLocal(row.learned);
  }

  /**
   * Records a 429: pauses every user of the account until `untilMs` and
   * stores `update` of what the account had learned (local epoch ms in and
   * out), the row locked so two processes' 429s both count.
   */
  async throttle(untilMs: number, update: (current: LearnedLimits) => LearnedLimits): Promise<LearnedLimits> {
    const seconds = Math.max(0, (untilMs - this.clock.now()) / 1000);
    const stored = await recordThrottle(this.db, this.account, seconds, (current) => this.toDb(update(this.toLocal(current))));
    return this.toLocal(stored);
  }

  private toLocal(l: LearnedLimits): LearnedLimits {
    const shift = (ms: number | null): number | null => (ms === null ? null : ms - this.offsetMs);
    return { ...l, lastThrottledAt: shift(l.lastThrottledAt), limitTooHighAt: shift(l.limitTooHighAt) };
  }

  private toDb(l: LearnedLimits): LearnedLimits {
    const shift = (ms: number | null): number | null => (ms === null ? null : ms + this.offsetMs);
    return { ...l, lastThrottledAt: shift(l.lastThrottledAt), limitTooHighAt: shift(l.limitTooHighAt) };
  }

  /** Local epoch ms until which the account is paused, or undefined. */
  async pausedUntil(): Promise<number | undefined> {
    const t0 = this.clock.now();
    const row = await readPause(this.db, this.account);
    const t1 = this.clock.now();
    if (!row || row.until_ms === null) return undefined;
    this.observeOffset(Number(row.now_ms) - (t0 + t1) / 2, t1 - t0, t1);
    const local = Number(row.until_ms) - this.offsetMs;
    return local > t1 ? local : undefined;
  }
}
