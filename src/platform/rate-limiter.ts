/**
 * Send slots for platform requests, so that no sliding one-second window as
 * the server sees it holds more than `requestsPerSecond` requests.
 *
 * The account's limit is a burst of `requestsPerSecond` in any second, so the
 * limiter keeps a sliding log: a request may leave as soon as the
 * `requestsPerSecond`-th send before it is `1000 * (1 + margin)` ms old, and
 * the `burst`-th send before it `burst` intervals old (`platform.burst`,
 * default 5: 5 at once, the next 5 515 ms later). Compared with even spacing
 * (one request every 103 ms) the rate is the same, but what is waiting goes
 * out together: a run's start-up requests do not queue behind each other,
 * and its last requests leave with the window that has room for them instead
 * of one by one. Bursts of half the limit rather than all of it keep a
 * server that answers one request slowly from starting the ones queued behind
 * it too close to the next burst. A fixed-window counter (p-queue's
 * `intervalCap`) would let up to twice the limit into a window that straddles
 * two intervals.
 *
 * What the server sees is the send time plus a delay that varies, and a
 * stalled event loop (garbage collection, parsing a big page, a busy machine)
 * makes it vary most. So:
 * - the log holds when each request was really flushed to the socket
 *   (`SendSlot.sent()`), not when it was granted. A send not reported yet
 *   counts as leaving now (up to `MAX_UNREPORTED_MS` after its grant): a busy
 *   event loop that has granted a slot but not yet written the request cannot
 *   let the request ten sends later out before it;
 * - while timers fire late and another process shares the account, the
 *   window widens by the recent lateness (decaying), here and in the shared
 *   budget: the other process keeps to the slots in the shared log, which
 *   hold when this process meant to send, not when a stall let it. Alone,
 *   the log of real send times is the whole truth and needs no widening.
 *
 * With a `SlotSource` (the Postgres-backed SharedBudget), slots come from a
 * log shared by every process using the account, kept the same way; while
 * another process uses it too, a slot that could not be used on time is
 * dropped rather than sent late. Alone on the account, a late slot is used:
 * the sliding log of this process's own sends is then the whole truth about
 * the window. Without a source nothing tells what another process sent in
 * the last second (a command that ran just before this one, say), so slots
 * are also spaced evenly, one window's worth over the window, as the
 * platform's bucket refills: no burst into a bucket someone else emptied.
 *
 * Adaptive back-off: `throttled()` (after a 429 or a rate-limit envelope)
 * pauses every request for Retry-After (or an exponential default), locally
 * and through the shared budget, and halves the rate (the window widens),
 * which then recovers linearly to the configured rate.
 */
import type { Logger } from 'pino';
import { type Clock, abortReason, systemClock } from './clock.js';

/** Where slots come from when several processes share the account's budget. */
export interface SlotSource {
  /**
   * Reserves `count` send slots, in order, each no earlier than now, than any
   * pause and than the slot reserved before it (by anyone), and each at least
   * `windowMs` after the slot `cap` slots before it; returns them as local
   * epoch milliseconds.
   */
  reserve(count: number, window: SlotWindow): Promise<number[]>;
  /** Pauses every user of the budget until local epoch ms `untilMs`. */
  pause(untilMs: number): Promise<void>;
  /**
   * False while no other process uses the budget: a late slot is then still
   * used (this process's own send log keeps the window), instead of dropped.
   */
  readonly contended?: boolean;
}

export interface RateLimiterOptions {
  requestsPerSecond: number;
  /** Extra spacing, as a fraction of the nominal interval. Default 0.03 (`platform.rateMargin`). */
  margin?: number;
  /** Most requests sent together, from the shared log (`platform.burst`). Default: the limit. */
  burst?: number;
  clock?: Clock;
  /** Shared budget; without one the limiter paces this process alone. */
  source?: SlotSource;
  /** Most slots reserved from the shared budget in one round trip. Default 4. */
  maxBatch?: number;
  /**
   * A shared slot more than this late (timer or event-loop delay) is dropped,
   * not used. Default: half the margin's width over a window (15 ms at 3%),
   * so a late slot never puts one request too many into a second, with room
   * left for jitter on the way.
   */
  lateToleranceMs?: number;
  /** Lowest fraction of the rate that repeated throttling goes down to. Default 0.25. */
  minRateFactor?: number;
  /** Time to recover from a halved rate back to the full rate, after the pause ends. Default 20 s. */
  recoveryMs?: number;
  /** Pause after a throttle without Retry-After: base * 2^streak, capped. Defaults 1000 ms, 30 s. */
  throttleBaseMs?: number;
  throttleMaxMs?: number;
  logger?: Logger;
  random?: () => number;
}

/** At most `cap` sends in any `windowMs`, and at most `burst` in any `burstWindowMs` (default: the same as cap). */
export interface SlotWindow {
  cap: number;
  windowMs: number;
  burst?: number;
  burstWindowMs?: number;
}

/** A granted send slot. Call `sent()` when the request has actually left (flushed to the socket). */
export interface SendSlot {
  readonly grantedAt: number;
  /** Records when the request really went out, if later than the grant (a stalled event loop); the first call counts. */
  sent(at?: number): void;
}

interface LogEntry {
  at: number;
  /** Granted, and not yet reported sent. */
  unreported: boolean;
}

/** An unreported send stops counting as "leaving now" this long after its grant (a caller that never reports). */
const MAX_UNREPORTED_MS = 2000;

interface Waiter {
  resolve: (slot: SendSlot) => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  done: boolean;
}

const WINDOW_MS = 1000;
const STALL_HALF_LIFE_MS = 2000;
const MAX_STALL_MS = 250;

export class RateLimiter {
  readonly requestsPerSecond: number;
  private readonly margin: number;
  private readonly clock: Clock;
  private readonly source: SlotSource | undefined;
  private readonly maxBatch: number;
  private readonly lateToleranceMs: number;
  private readonly minRateFactor: number;
  private readonly recoveryMs: number;
  private readonly throttleBaseMs: number;
  private readonly throttleMaxMs: number;
  private readonly logger: Logger | undefined;
  private readonly random: () => number;
  /** How many sends the sliding log allows per window. */
  private readonly windowCap: number;
  /** The window those sends fit in at the full rate, margin included (1.03 s for 10 requests/s). */
  private readonly baseWindowMs: number;
  /** Sends that may go together, and the window they fit in (5 in 515 ms for 10 requests/s). */
  private readonly burstCap: number;
  private readonly baseBurstWindowMs: number;

  private readonly waiters: Waiter[] = [];
  private running = false;
  private closed = false;
  /** Next slot when slots are spaced evenly (no shared source). */
  private nextSlot = -Infinity;
  /** Slots reserved from the shared source, oldest first. */
  private reserved: number[] = [];
  /** Recent sends (grant time, moved to the real send time when known), oldest first; at most windowCap entries. */
  private readonly sent: LogEntry[] = [];
  private pausedUntil = -Infinity;
  private factorAtThrottle = 1;
  private recoveryStartsAt = -Infinity;
  private throttleStreak = 0;
  private sharedFailures = 0;
  private stallMs = 0;
  private stallAt = -Infinity;
  private granted = 0;

  constructor(options: RateLimiterOptions) {
    if (!(options.requestsPerSecond > 0)) throw new TypeError(`requestsPerSecond must be > 0 (got ${options.requestsPerSecond})`);
    this.requestsPerSecond = options.requestsPerSecond;
    this.margin = options.margin ?? 0.03;
    this.clock = options.clock ?? systemClock;
    this.source = options.source;
    this.maxBatch = Math.max(1, options.maxBatch ?? 4);
    this.lateToleranceMs = options.lateToleranceMs ?? (this.margin * WINDOW_MS) / 2;
    this.minRateFactor = options.minRateFactor ?? 0.25;
    this.recoveryMs = options.recoveryMs ?? 20_000;
    this.throttleBaseMs = options.throttleBaseMs ?? 1000;
    this.throttleMaxMs = options.throttleMaxMs ?? 30_000;
    this.logger = options.logger;
    this.random = options.random ?? Math.random;
    // At most the whole requests of a second in any second (2 for 2.5/s, the safe side), or one per 1/rate s below 1/s.
    this.windowCap = Math.max(1, Math.floor(this.requestsPerSecond));
    this.baseWindowMs = Math.max(WINDOW_MS, (WINDOW_MS * this.windowCap) / this.requestsPerSecond) * (1 + this.margin);
    this.burstCap = Math.min(this.windowCap, Math.max(1, Math.floor(options.burst ?? this.windowCap)));
    this.baseBurstWindowMs = (this.baseWindowMs * this.burstCap) / this.windowCap;
  }

  /** Current fraction of the configured rate (below 1 while recovering from throttling). */
  rateFactor(now = this.clock.now()): number {
    if (this.factorAtThrottle >= 1) return 1;
    if (now <= this.recoveryStartsAt) return this.factorAtThrottle;
    const f = this.factorAtThrottle + ((now - this.recoveryStartsAt) / this.recoveryMs) * (1 - this.factorAtThrottle);
    if (f >= 1) {
      this.factorAtThrottle = 1;
      return 1;
    }
    return f;
  }

  /**
   * The sliding window now: `windowCap` sends fit in it (wider while recovering from throttling, and
   * while timers fire late with another process on the account).
   */
  windowMs(now = this.clock.now()): number {
    return this.widened(this.baseWindowMs, now);
  }

  /** The burst's window now: `burst` sends fit in it. */
  private burstWindowMs(now: number): number {
    return this.widened(this.baseBurstWindowMs, now);
  }

  private widened(ms: number, now: number): number {
    const shared = this.source !== undefined && this.source.contended !== false;
    return ms / this.rateFactor(now) + (shared ? this.stallAllowance(now) : 0);
  }

  /** Local epoch ms until which requests are held back (-Infinity when not paused). */
  get pausedUntilMs(): number {
    return this.pausedUntil;
  }

  /** Slots granted so far. */
  get grants(): number {
    return this.granted;
  }

  /** Waits for a send slot; send the request right after it resolves, and report `slot.sent()` when it has gone out. */
  acquire(signal?: AbortSignal): Promise<SendSlot> {
    if (this.closed) return Promise.reject(new Error('RateLimiter is closed'));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<SendSlot>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, onAbort: undefined, done: false };
      if (signal) {
        waiter.onAbort = () => {
          if (waiter.done) return;
          waiter.done = true;
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(abortReason(signal));
        };
        signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
      if (!this.running) void this.run();
    });
  }

  /**
   * The platform said "too many requests": hold every request back for
   * `retryAfterMs` (or an exponential default), here and in the shared budget,
   * and lower the rate. Calls during a pause only extend it.
   */
  throttled(retryAfterMs?: number): number {
    const now = this.clock.now();
    const inPause = now < this.pausedUntil;
    let pauseMs: number;
    if (retryAfterMs !== undefined && retryAfterMs >= 0) {
      pauseMs = retryAfterMs;
    } else {
      const ceiling = Math.min(this.throttleMaxMs, this.throttleBaseMs * 2 ** Math.min(this.throttleStreak, 16));
      pauseMs = ceiling / 2 + (this.random() * ceiling) / 2;
    }
    const until = now + pauseMs;
    if (until > this.pausedUntil) this.pausedUntil = until;
    if (!inPause) {
      this.throttleStreak++;
      this.factorAtThrottle = Math.max(this.minRateFactor, this.rateFactor(now) / 2);
    }
    this.recoveryStartsAt = Math.max(this.recoveryStartsAt, this.pausedUntil);
    // Reserved slots inside the pause are no good any more.
    this.reserved = this.reserved.filter((t) => t >= this.pausedUntil);
    this.logger?.warn(
      { pauseMs: Math.round(pauseMs), rateFactor: Number(this.factorAtThrottle.toFixed(3)) },
      'platform rate limit hit: pausing requests',
    );
    if (this.source) {
      this.source.pause(this.pausedUntil).catch((err: unknown) => {
        this.logger?.warn({ err }, 'could not record the pause in the shared request budget');
      });
    }
    return pauseMs;
  }

  /** A request succeeded: the next throttle starts its default pause from the base again. */
  succeeded(): void {
    if (this.throttleStreak > 0 && this.clock.now() >= this.pausedUntil) this.throttleStreak = 0;
  }

  /** Rejects every waiter; later acquires fail. */
  close(): void {
    this.closed = true;
    for (const w of this.waiters.splice(0)) this.settle(w, { error: new Error('RateLimiter is closed') });
  }

  private settle(w: Waiter, outcome: { slot: SendSlot } | { error: unknown }): void {
    if (w.done) return;
    w.done = true;
    if (w.signal && w.onAbort) w.signal.removeEventListener('abort', w.onAbort);
    if ('slot' in outcome) w.resolve(outcome.slot);
    else w.reject(outcome.error);
  }

  /** Earliest time the sliding log of this process's sends allows the next one (the window, then the burst's). */
  private guardTime(): number {
    const now = this.clock.now();
    return Math.max(this.leftAt(this.windowCap, now) + this.windowMs(now), this.leftAt(this.burstCap, now) + this.burstWindowMs(now));
  }

  /** When the `back`-th send before the next one left (-Infinity while there are fewer). */
  private leftAt(back: number, now: number): number {
    if (this.sent.length < back) return -Infinity;
    const e = this.sent[this.sent.length - back]!;
    return e.unreported ? Math.max(e.at, Math.min(now, e.at + MAX_UNREPORTED_MS)) : e.at;
  }

  /**
   * Extra room in the sliding window while this process is stalling. A timer
   * that fires late means the event loop (or the machine) is busy; requests
   * already handed out may then reach the server late as well, and bunch up
   * there with the next window's. The largest recent lateness, decaying with a
   * half-life of 2 s, widens the window by as much.
   */
  private stallAllowance(now: number): number {
    if (this.stallMs <= 0) return 0;
    return this.stallMs * 0.5 ** ((now - this.stallAt) / STALL_HALF_LIFE_MS);
  }

  private noteLateness(lateMs: number, now: number): void {
    const late = Math.min(MAX_STALL_MS, lateMs);
    if (late > 2 && late > this.stallAllowance(now)) {
      this.stallMs = late;
      this.stallAt = now;
    }
  }

  private async run(): Promise<void> {
    this.running = true;
    /** When the last sleep was meant to end, to measure how late it did. */
    let wokeFor: number | undefined;
    try {
      while (this.waiters.length > 0 && !this.closed) {
        const head = this.waiters[0]!;
        if (head.done) {
          this.waiters.shift();
          continue;
        }
        const now = this.clock.now();
        let slot: number;
        let fromSource = false;
        if (this.source && this.sharedFailures === 0) {
          const tolerance = this.source.contended === false ? Infinity : this.lateToleranceMs;
          while (this.reserved.length > 0 && this.reserved[0]! < now - tolerance) this.reserved.shift();
          if (this.reserved.length === 0) {
            const count = Math.min(this.maxBatch, this.waiters.length);
            try {
              // While this process stalls, its requests may reach the server late:
              // the window it reserves in is that much wider (windowMs), for the other processes' sake too.
              this.reserved = [
                ...(await this.source.reserve(count, {
                  cap: this.windowCap,
                  windowMs: this.windowMs(now),
                  burst: this.burstCap,
                  burstWindowMs: this.burstWindowMs(now),
                })),
              ];
            } catch (err) {
              this.sharedFailures = 1;
              this.logger?.warn({ err }, 'shared request budget unavailable: pacing this process alone for a while');
              setTimeout(() => (this.sharedFailures = 0), 5000).unref();
            }
            continue;
          }
          slot = this.reserved[0]!;
          fromSource = true;
        } else {
          slot = Math.max(this.nextSlot, now);
        }
        if (wokeFor !== undefined) {
          this.noteLateness(now - wokeFor, now);
          wokeFor = undefined;
        }
        const at = Math.max(slot, this.pausedUntil, this.guardTime());
        if (at - now >= 0.5) {
          wokeFor = at;
          await this.clock.sleep(Math.ceil(at - now));
          continue;
        }
        // Grant the head waiter.
        this.waiters.shift();
        if (head.done) continue;
        if (fromSource) this.reserved.shift();
        // Without the account's log, the next slot is one interval after this grant as it really
        // happened (a timer that fired late is not caught up with a shorter gap).
        if (!fromSource) this.nextSlot = now + this.windowMs(now) / this.windowCap;
        // Logged as granted now (the window counts from when the request really goes),
        // moved to when it was really flushed once the caller reports it.
        const entry: LogEntry = { at: now, unreported: true };
        this.sent.push(entry);
        if (this.sent.length > this.windowCap) this.sent.shift();
        this.granted++;
        const clock = this.clock;
        this.settle(head, {
          slot: {
            grantedAt: now,
            sent(at = clock.now()) {
              if (!entry.unreported) return;
              entry.unreported = false;
              if (at > entry.at) entry.at = at;
            },
          },
        });
      }
    } finally {
      this.running = false;
    }
    if (this.waiters.length > 0 && !this.closed) void this.run();
  }
}
