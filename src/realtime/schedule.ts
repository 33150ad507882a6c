/**
 * When each list is flushed: its queue (events waiting, re-checks, failed
 * claims), the timer of its next flush, and its backoff.
 *
 * A flush starts `windowMs` after the first queued event, and no sooner than
 * `minIntervalMs` after the previous flush of the list (up to four times
 * longer while the shared request budget is busy, BudgetPace), so a steady
 * stream of edits costs about one request a second. Re-checks follow after
 * `recheckDelayMs`; a failed claim waits `retryDelayMs`, doubling per failed
 * attempt up to `maxRetryDelayMs`. A flush that fails as a whole, or stops
 * after chunks failing in a row, makes the list back off (doubling); once a
 * chunk is applied again, every waiting claim is tried at the next flush.
 * One flush of a list runs at a time.
 */
import type { ListConfig } from '../config.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { absorb, type Claim } from './claim-merge.js';

export interface ScheduleTimings {
  windowMs: number;
  minIntervalMs: number;
  recheckDelayMs: number;
  retryDelayMs: number;
  maxRetryDelayMs: number;
}

/** The wait before attempt `attempts + 1`: doubling from `retryDelayMs`, at most `maxRetryDelayMs`. */
export function backoffMs(t: ScheduleTimings, attempts: number): number {
  return Math.min(t.maxRetryDelayMs, t.retryDelayMs * 2 ** Math.max(0, Math.min(30, attempts - 1)));
}

/** How much the least interval between flushes widens with the account's request budget. */
export class BudgetPace {
  private recent: { at: number; requests: number } = { at: Date.now(), requests: 0 };

  constructor(
    private readonly client: PlatformClient,
    private readonly requestsPerSecond: number,
  ) {}

  /** 1 while the budget is free; up to 4 when the shared limiter throttles, or when this process used most of the rate in the last second. */
  factor(): number {
    const now = Date.now();
    const total = this.client.stats().requests;
    if (now - this.recent.at >= 1000) this.recent = { at: now, requests: total };
    const share = (total - this.recent.requests) / Math.max(1, this.requestsPerSecond);
    const rate = this.client.rateFactor();
    const throttled = rate < 1 ? 1 / Math.max(0.25, rate) : 1;
    return Math.min(4, Math.max(throttled, share > 0.7 ? 2 : 1));
  }
}

export interface ScheduleDeps {
  timings: ScheduleTimings;
  pace: BudgetPace;
  /** Flushes the list; a throw means nothing was taken off its queue. */
  flush: (s: ListSchedule) => Promise<void>;
  closed: () => boolean;
  log: Logger;
}

/** One list's queue and the timer of its next flush. */
export class ListSchedule {
  readonly inbox = new Set<number>();
  readonly rechecks = new Map<string, Claim>();
  /** Claims whose apply failed, by item ID: tried again from `retryAt`, in ever smaller chunks. */
  readonly retry = new Map<string, Claim>();
  running: Promise<void> | null = null;
  /**
   * When the current backlog's drain was decided (0: none). Decided again only once the backlog fell
   * below the threshold and a while passed since (backlog-pull.ts).
   */
  backlogDecidedAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = 0;
  private lastFlushAt = 0;
  /** Flushes in a row that failed as a whole, or stopped: the list backs off. */
  private failedFlushes = 0;
  private backoffUntil = 0;

  constructor(
    readonly list: ListConfig,
    private readonly deps: ScheduleDeps,
  ) {}

  /** Whether anything is queued, waiting for a retry, or running. */
  busy(): boolean {
    return this.inbox.size > 0 || this.rechecks.size > 0 || this.retry.size > 0 || this.running !== null;
  }

  /** Queues a stored event; the next flush comes within the window. */
  add(inboxId: number): void {
    this.inbox.add(inboxId);
    this.arm(this.deps.timings.windowMs);
  }

  disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Forgets the list's backoff and every retry's wait: the next flush tries everything (flushAll). */
  dueNow(): void {
    this.backoffUntil = 0;
    for (const c of this.retry.values()) c.retryAt = 0;
  }

  /**
   * Schedules the next flush: after `delayMs`, no sooner than the (widened) interval since the last,
   * and not while the list backs off. An earlier time replaces a later one already set.
   */
  private arm(delayMs: number): void {
    if (this.running || this.deps.closed()) return;
    const now = Date.now();
    const { timings, pace } = this.deps;
    const at = Math.max(now + delayMs, this.lastFlushAt + timings.minIntervalMs * pace.factor(), this.backoffUntil);
    if (this.timer && this.timerAt <= at) return;
    this.disarm();
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.run();
    }, at - now);
  }

  /** The next flush after one: new events soon, re-checks and retries when due. */
  private rearm(): void {
    if (this.deps.closed()) return;
    const now = Date.now();
    const { timings } = this.deps;
    const delays: number[] = [];
    if (this.inbox.size) delays.push(timings.windowMs);
    if (this.rechecks.size) delays.push(timings.recheckDelayMs);
    for (const c of this.retry.values()) delays.push(Math.max(0, c.retryAt - now));
    if (delays.length) this.arm(Math.min(...delays));
  }

  /** Runs the list's flush, or joins the one running. */
  run(): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      try {
        await this.deps.flush(this);
      } catch (err) {
        this.backOff();
        this.deps.log.error(
          { list: this.list.name, err: coerceError(err), retryInMs: backoffMs(this.deps.timings, this.failedFlushes) },
          'applying item events failed; they stay queued and are tried again',
        );
      } finally {
        this.lastFlushAt = Date.now();
        this.running = null;
        this.rearm();
      }
    })();
    return this.running;
  }

  private backOff(): void {
    this.failedFlushes++;
    this.backoffUntil = Date.now() + backoffMs(this.deps.timings, this.failedFlushes);
  }

  /**
   * After a flush: one that stopped (new events failing, or chunks failing in a row) backs the list
   * off; once a chunk is applied after that, the platform answers again and every waiting claim is
   * due at the next flush, not at the end of its own backoff. One item failing alone backs off alone.
   */
  settle(flush: { stopped: boolean; succeeded: boolean }): void {
    if (flush.stopped) this.backOff();
    else if (flush.succeeded && this.failedFlushes > 0) {
      this.failedFlushes = 0;
      this.backoffUntil = 0;
      const now = Date.now();
      for (const c of this.retry.values()) c.retryAt = Math.min(c.retryAt, now);
    }
  }

  /** New claims of items that wait for a retry join them (and leave `fresh`). */
  holdWithRetries(fresh: Map<string, Claim>): void {
    for (const [id, c] of fresh) {
      const waiting = this.retry.get(id);
      if (!waiting) continue;
      absorb(waiting, c);
      fresh.delete(id);
    }
  }

  /** Takes the failed claims whose retry is due off the retry queue. */
  takeDueRetries(now: number): Claim[] {
    const due = [...this.retry.values()].filter((c) => c.retryAt <= now);
    for (const c of due) this.retry.delete(c.id);
    return due;
  }

  /** Claims whose apply failed: one attempt more each, tried again after their backoff. */
  failed(claims: readonly Claim[]): void {
    const now = Date.now();
    for (const c of claims) {
      c.attempts++;
      this.waitForRetry(c, now + backoffMs(this.deps.timings, c.attempts));
    }
  }

  /** Claims a stopped flush did not try: back to the queue as they were, until the list's next backoff ends. */
  untried(claims: readonly Claim[], now: number): void {
    for (const c of claims) this.waitForRetry(c, now + backoffMs(this.deps.timings, this.failedFlushes + 1));
  }

  /** Claims re-read later: the platform showed an older version than announced. */
  recheckLater(claims: readonly Claim[]): void {
    for (const c of claims) {
      c.rechecks++;
      this.rechecks.set(c.id, c);
    }
  }

  private waitForRetry(c: Claim, at: number): void {
    const waiting = this.retry.get(c.id);
    if (waiting && waiting !== c) absorb(c, waiting);
    c.retryAt = at;
    this.retry.set(c.id, c);
  }
}
