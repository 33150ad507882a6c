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
 * The server counts a request when its handler runs, after a delay that
 * varies. The round trips show by how much (`SendSlot.answered()`: a request
 * answered later than the quickest of its endpoint's recent answers may have
 * waited that much longer), but not when one request was counted: its answer
 * may be held after the count by as much again. So the window is a second,
 * plus the margin, plus the largest such variation the recent answers show
 * (`spreadMs`): a request a window after another then reaches the count more
 * than a second after it even if the first waited the longest and the second
 * the shortest. While an endpoint has few answers (a fresh account) the
 * variation is assumed to be at least COLD_DELAY_MS, and it narrows only as
 * more answers show less. This holds against a strict sliding second, and so
 * against a token bucket and a fixed window, which allow at least as much.
 *
 * Learned per account (src/platform/learned-limits.ts; kept in the shared
 * budget's row when there is one, so the next process starts from it): up to
 * `burst` requests leave together only while no 429 has been seen lately; a
 * 429 turns bursts off and widens the window by a learned margin, both
 * relaxed slowly while no 429 comes. `throttled()` (after a 429 or a
 * rate-limit envelope) pauses every request for Retry-After (or one window;
 * doubling while 429s come back to back), locally and through the shared
 * budget, then requests resume at the configured rate with the learned
 * margin: under a configured limit, a 429 costs about one window. Only when
 * 429s keep coming at the widened margin (two more within a minute) is the
 * rate halved, recovering linearly: the configured limit is then likely
 * above the platform's, which the log says and `status` shows.
 *
 * The arithmetic (the window's width, the next send time, the round-trip
 * estimate, stalls, a throttle's pause) is src/platform/send-time.ts's, pure;
 * this class keeps the state it is given and runs the grant loop.
 *
 * Tests: test/platform/send-time.test.ts (the arithmetic, by table),
 * test/platform/rate-limiter.test.ts (decisions, manual clock),
 * test/platform/shared-budget.test.ts (what a second process starts from).
 */
import type { Logger } from 'pino';
import { type Clock, abortReason, systemClock } from './clock.js';
import { INITIAL_LEARNED, type LearnedLimits, afterThrottle, relaxed } from './learned-limits.js';
import {
  type LogLimits,
  NO_STALL,
  RTT_SAMPLES,
  type Stall,
  afterLateness,
  burstWindowOf,
  handlerDelay,
  keptSchedule,
  nextSendTime,
  spreadOf,
  stallAllowance,
  throttlePauseMs,
  windowWidthMs,
} from './send-time.js';

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
  /** The process can do without it: failing, it is left for good and quietly (debug, not warn). */
  readonly optional?: boolean;
  /** What the account's limiter learned so far (local epoch ms); undefined when nothing is recorded. */
  readLearned?(): Promise<LearnedLimits | undefined>;
  /** Records a 429: pauses the account until `untilMs` and stores `update` of what it had learned; returns the stored state. */
  throttle?(untilMs: number, update: (current: LearnedLimits) => LearnedLimits): Promise<LearnedLimits>;
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
  /** What was learned about the account before (default: nothing; with a source, read from it before the first grant). */
  learned?: LearnedLimits;
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
  /**
   * Records a successful answer of endpoint `key` (its round trip, from the
   * send): how long the server may have held the request before counting it.
   * The first call counts; not called for failures (a refusal comes back early).
   */
  answered(key: string, at?: number): void;
}

interface LogEntry {
  at: number;
  /** Granted, and not yet reported sent. */
  unreported: boolean;
  /** How much longer than the quickest recent answer its answer took; null until answered. */
  delayMs: number | null;
}

interface Waiter {
  resolve: (slot: SendSlot) => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  done: boolean;
}

const WINDOW_MS = 1000;
/** A 429 with two others counted this long before it came at the widened margin: halve the rate. */
const REPEAT_WINDOW_MS = 60_000;
/** How often a limiter with a shared source rereads what the account learned (another process's 429). */
const LEARNED_REFRESH_MS = 10_000;

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
  /** How many sends the sliding log allows per window. */
  private readonly windowCap: number;
  /** The window those sends fit in at the full rate, margin included (1.03 s for 10 requests/s). */
  private readonly baseWindowMs: number;
  /** Sends that may go together while bursts are allowed (5 for `platform.burst` 5). */
  private readonly burstCap: number;

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
  private stall: Stall = NO_STALL;
  private granted = 0;
  private learned: LearnedLimits;
  /** 0: not read from the source yet; 1: reading; 2: read (or nothing to read). */
  private learnedState: 0 | 1 | 2;
  private learnedReadAt = -Infinity;
  /** When the last 429s that taught something came (local ms), newest last. */
  private readonly counted: number[] = [];
  /** Round trips of each endpoint's recent answers, newest last. */
  private readonly rtts = new Map<string, number[]>();
  /** The last window's worth of delay estimates (windowCap), newest last: the largest widens the window (spreadMs). */
  private readonly delays: number[] = [];
  /** While sends are evenly spaced: when the last one was due by the schedule. */
  private spacedAt = -Infinity;

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
    // At most the whole requests of a second in any second (2 for 2.5/s, the safe side), or one per 1/rate s below 1/s.
    this.windowCap = Math.max(1, Math.floor(this.requestsPerSecond));
    this.baseWindowMs = Math.max(WINDOW_MS, (WINDOW_MS * this.windowCap) / this.requestsPerSecond) * (1 + this.margin);
    this.burstCap = Math.min(this.windowCap, Math.max(1, Math.floor(options.burst ?? this.windowCap)));
    this.learned = { ...(options.learned ?? INITIAL_LEARNED) };
    this.learnedState = this.source?.readLearned ? 0 : 2;
  }

  /** What the limiter has learned about the account, as it applies now. */
  learnedNow(now = this.clock.now()): LearnedLimits {
    return relaxed(this.learned, now);
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
    const shared = this.source !== undefined && this.source.contended !== false;
    return windowWidthMs({
      baseWindowMs: this.baseWindowMs,
      spreadMs: this.spreadMs(),
      learnedMarginMs: this.learnedNow(now).marginMs,
      rateFactor: this.rateFactor(now),
      stallMs: shared ? stallAllowance(this.stall, now) : 0,
    });
  }

  /** Sends that may go together now: `burst`, or one while bursts are off. */
  private burstCapNow(now: number): number {
    return this.learnedNow(now).burstsAllowed ? this.burstCap : 1;
  }

  /** The burst's window now: `burstCapNow` sends fit in it. */
  private burstWindowMs(now: number): number {
    return burstWindowOf(this.windowMs(now), this.burstCapNow(now), this.windowCap);
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
   * `retryAfterMs` (or one window, doubling while 429s come back to back),
   * here and in the shared budget. A 429 to a request sent after the last
   * lesson (`sentAt`, its grant) teaches: bursts off, a wider margin; if two
   * others taught within a minute before it, the rate is halved too (the
   * configured limit looks too high). One sent before, or during a pause,
   * only extends the pause.
   */
  throttled(retryAfterMs?: number, sentAt?: number): number {
    const now = this.clock.now();
    const inPause = now < this.pausedUntil;
    const lastLesson = this.counted.at(-1) ?? -Infinity;
    const teaches = !inPause && !(sentAt !== undefined && sentAt < lastLesson);
    const pauseMs = throttlePauseMs(retryAfterMs, {
      streak: this.throttleStreak,
      windowMs: this.windowMs(now),
      baseMs: this.throttleBaseMs,
      maxMs: this.throttleMaxMs,
    });
    const until = now + pauseMs;
    if (until > this.pausedUntil) this.pausedUntil = until;
    if (!inPause) this.throttleStreak++;
    let halved = false;
    if (teaches) {
      while (this.counted.length > 0 && this.counted[0]! < now - REPEAT_WINDOW_MS) this.counted.shift();
      halved = this.counted.length >= 2;
      this.counted.push(now);
      this.learned = afterThrottle(this.learned, now);
      if (halved) {
        this.factorAtThrottle = Math.max(this.minRateFactor, this.rateFactor(now) / 2);
        this.learned.limitTooHighAt = now;
      }
    }
    this.recoveryStartsAt = Math.max(this.recoveryStartsAt, this.pausedUntil);
    // Reserved slots inside the pause are no good any more.
    this.reserved = this.reserved.filter((t) => t >= this.pausedUntil);
    const learned = this.learnedNow(now);
    const fields = { pauseMs: Math.round(pauseMs), marginMs: learned.marginMs, bursts: learned.burstsAllowed };
    if (halved)
      this.logger?.warn(
        { ...fields, rateFactor: Number(this.factorAtThrottle.toFixed(3)), requestsPerSecond: this.requestsPerSecond },
        'platform rate limit hit again at the widened margin: platform.requestsPerSecond looks higher than the platform allows; halving the rate',
      );
    else this.logger?.warn(fields, 'platform rate limit hit: pausing requests');
    this.share(teaches, now);
    return pauseMs;
  }

  /** Tells the shared budget about a pause, and what a 429 taught (merged with what other processes learned). */
  private share(teaches: boolean, now: number): void {
    if (!this.source) return;
    const failed = (err: unknown): void => this.budgetTrouble(err, 'could not record the pause in the shared request budget');
    if (!teaches || !this.source.throttle) {
      this.source.pause(this.pausedUntil).catch(failed);
      return;
    }
    const mine = this.learned;
    this.source
      .throttle(this.pausedUntil, (current) => {
        const merged = afterThrottle(current, now);
        return {
          ...merged,
          marginMs: Math.max(merged.marginMs, mine.marginMs),
          limitTooHighAt: mine.limitTooHighAt ?? merged.limitTooHighAt,
        };
      })
      .then((stored) => {
        this.learned = { ...stored };
        this.learnedState = 2;
      })
      .catch(failed);
  }

  /** The shared budget failed: a warning, or a debug line when the process can do without it. */
  private budgetTrouble(err: unknown, message: string): void {
    if (this.source?.optional) this.logger?.debug({ err }, message);
    else this.logger?.warn({ err }, message);
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

  /** What the sliding log of this process's sends allows at `now`. */
  private logLimits(now: number): LogLimits {
    const burst = this.burstCapNow(now);
    const windowMs = this.windowMs(now);
    return {
      now,
      log: this.sent,
      windowCap: this.windowCap,
      windowMs,
      burst,
      burstWindowMs: burstWindowOf(windowMs, burst, this.windowCap),
      spacedAt: this.spacedAt,
    };
  }

  /**
   * How much the server's handler delay varies, as the recent answers show it: the largest of
   * their delays over the quickest (at least COLD_DELAY_MS for an endpoint with fewer than
   * WARM_SAMPLES answers). The window is this much wider. 0 before any answer: the first window's
   * sends all leave before the window ends, and the send after them waits for it.
   */
  spreadMs(): number {
    return spreadOf(this.delays);
  }

  /** How long the server held a request of `key` answered after `rttMs`: its round trip over the quickest recent one. */
  private noteAnswer(key: string, rttMs: number): number {
    let rtts = this.rtts.get(key);
    if (!rtts) this.rtts.set(key, (rtts = []));
    rtts.push(rttMs);
    if (rtts.length > RTT_SAMPLES) rtts.shift();
    const delay = handlerDelay(rtts, rttMs);
    this.delays.push(delay);
    if (this.delays.length > this.windowCap) this.delays.shift();
    return delay;
  }

  /** Reads what the account learned: before the first grant, then every LEARNED_REFRESH_MS in the background. */
  private async loadLearned(now: number, wait: boolean): Promise<void> {
    const source = this.source;
    if (!source?.readLearned || this.learnedState === 1) return;
    if (this.learnedState === 2 && now - this.learnedReadAt < LEARNED_REFRESH_MS) return;
    this.learnedState = 1;
    this.learnedReadAt = now;
    const read = source
      .readLearned()
      .then((l) => {
        // A lesson of this process's own not stored yet stays.
        if (l && (l.lastThrottledAt ?? -Infinity) >= (this.learned.lastThrottledAt ?? -Infinity)) this.learned = { ...l };
      })
      .catch((err: unknown) => this.budgetTrouble(err, 'could not read what the shared request budget learned'))
      .finally(() => (this.learnedState = 2));
    if (wait) await read;
  }

  private slotFor(entry: LogEntry, grantedAt: number): SendSlot {
    const clock = this.clock;
    const noteAnswer = (key: string, rtt: number): number => this.noteAnswer(key, rtt);
    return {
      grantedAt,
      sent(at = clock.now()) {
        if (!entry.unreported) return;
        entry.unreported = false;
        if (at > entry.at) entry.at = at;
      },
      answered(key: string, at = clock.now()) {
        if (entry.delayMs !== null) return;
        if (entry.unreported) this.sent(at);
        entry.delayMs = noteAnswer(key, Math.max(0, at - entry.at));
      },
    };
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
        if (this.learnedState !== 2 || this.granted === 0) await this.loadLearned(this.clock.now(), true);
        else void this.loadLearned(this.clock.now(), false);
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
                  burst: this.burstCapNow(now),
                  burstWindowMs: this.burstWindowMs(now),
                })),
              ];
            } catch (err) {
              this.sharedFailures = 1;
              this.budgetTrouble(err, 'shared request budget unavailable: pacing this process alone for a while');
              if (!this.source.optional) setTimeout(() => (this.sharedFailures = 0), 5000).unref();
            }
            continue;
          }
          slot = this.reserved[0]!;
          fromSource = true;
        } else {
          slot = Math.max(this.nextSlot, now);
        }
        if (wokeFor !== undefined) {
          // A timer that fired late means the event loop (or the machine) is busy: requests already
          // handed out may reach the server late as well, and bunch up there with the next window's.
          this.stall = afterLateness(this.stall, now - wokeFor, now);
          wokeFor = undefined;
        }
        const at = nextSendTime(slot, this.pausedUntil, this.logLimits(this.clock.now()));
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
        const entry: LogEntry = { at: now, unreported: true, delayMs: null };
        this.sent.push(entry);
        if (this.sent.length > this.windowCap) this.sent.shift();
        this.granted++;
        this.spacedAt = keptSchedule(this.spacedAt, this.burstWindowMs(now), now);
        this.settle(head, { slot: this.slotFor(entry, now) });
      }
    } finally {
      this.running = false;
    }
    if (this.waiters.length > 0 && !this.closed) void this.run();
  }
}
