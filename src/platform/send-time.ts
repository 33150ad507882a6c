/**
 * Pure: when the next platform request may leave, and how wide the sliding
 * window it must fit in is (the rules are told in rate-limiter.ts, which
 * keeps the state these take and grants the slots).
 *
 * - The window: the base window (a second's worth of sends plus the margin),
 *   widened by how much the server's handler delay varies (`spreadOf`), by
 *   the margin learned from 429s, divided by the rate factor while a halved
 *   rate recovers, plus the room a stalling event loop needs while another
 *   process shares the account (`stallAllowance`).
 * - The next send: no sooner than its slot, the end of a pause, a window
 *   after the `windowCap`-th send before it left, and a burst's window after
 *   the `burst`-th; when sends go one at a time, one interval after the
 *   schedule they keep (`keptSchedule`), so that timer lateness is not added
 *   to every interval.
 *
 * Times are epoch milliseconds. Tested table by table in
 * test/platform/send-time.test.ts.
 */

/** An unreported send stops counting as "leaving now" this long after its grant (a caller that never reports). */
export const MAX_UNREPORTED_MS = 2000;
/** Recent answers per endpoint whose quickest is taken as "not held back". */
export const RTT_SAMPLES = 32;
/**
 * An endpoint with fewer answers than this does not show how its delay varies
 * yet (the quickest of a few may itself have waited): at least COLD_DELAY_MS.
 */
const WARM_SAMPLES = 6;
const COLD_DELAY_MS = 50;
/** The largest handler-delay variation the window is widened by (a stalled answer is not a second's delay). */
const MAX_SPREAD_MS = 250;
const STALL_HALF_LIFE_MS = 2000;
const MAX_STALL_MS = 250;

/** A send in the log: when it left (its grant, while not reported yet). */
export interface LoggedSend {
  readonly at: number;
  /** Granted, and not yet reported sent. */
  readonly unreported: boolean;
}

/** The largest recent lateness of a timer (ms) and when it was seen. */
export interface Stall {
  readonly ms: number;
  readonly at: number;
}

export const NO_STALL: Stall = { ms: 0, at: -Infinity };

export interface WindowParts {
  /** A second's worth of sends at the full rate, margin included. */
  baseWindowMs: number;
  spreadMs: number;
  /** The margin learned from 429s (learned-limits.ts). */
  learnedMarginMs: number;
  /** Fraction of the configured rate (below 1 while a halved rate recovers). */
  rateFactor: number;
  /** Room for a stalling event loop; 0 while alone on the account. */
  stallMs: number;
}

/** The sliding window's width: `windowCap` sends fit in it. */
export function windowWidthMs(p: WindowParts): number {
  const ms = p.baseWindowMs + p.spreadMs + p.learnedMarginMs;
  return ms / p.rateFactor + p.stallMs;
}

/** The window `burst` sends fit in, of a window `windowCap` sends fit in. */
export function burstWindowOf(windowMs: number, burst: number, windowCap: number): number {
  return (windowMs * burst) / windowCap;
}

export interface LogLimits {
  now: number;
  /** Recent sends, oldest first. */
  log: readonly LoggedSend[];
  windowCap: number;
  windowMs: number;
  /** Sends that may go together now (1: one at a time, on the schedule). */
  burst: number;
  burstWindowMs: number;
  /** When the last send was due by the schedule of sends one at a time. */
  spacedAt: number;
}

/** When the next request may leave: its slot, the end of a pause, and what the log of sends allows. */
export function nextSendTime(slot: number, pausedUntil: number, limits: LogLimits): number {
  return Math.max(slot, pausedUntil, earliestByLog(limits));
}

/** The earliest time the log of sends allows the next one (the window, then the burst's). */
export function earliestByLog(l: LogLimits): number {
  // The window and a burst's spacing count from when the sends left (the window holds the
  // variation of the handler delay); sends one at a time keep to a schedule.
  const spacing = l.burst === 1 ? l.spacedAt + l.burstWindowMs : leftAt(l.log, l.burst, l.now) + l.burstWindowMs;
  return Math.max(leftAt(l.log, l.windowCap, l.now) + l.windowMs, spacing);
}

/** When the `back`-th send before the next one left (-Infinity while there are fewer); one not reported yet is leaving now. */
export function leftAt(log: readonly LoggedSend[], back: number, now: number): number {
  if (log.length < back) return -Infinity;
  const e = log[log.length - back]!;
  return e.unreported ? Math.max(e.at, Math.min(now, e.at + MAX_UNREPORTED_MS)) : e.at;
}

/**
 * The schedule of sends one at a time after a grant at `now`: the time it was due when it is less
 * than half an interval late (the next may then follow up to that much sooner, the window's log
 * still holding), else `now`.
 */
export function keptSchedule(spacedAt: number, intervalMs: number, now: number): number {
  const due = spacedAt + intervalMs;
  return now >= due && now - due < intervalMs / 2 ? due : now;
}

/**
 * How long the server may have held a request answered after `rttMs`: its round trip over the
 * quickest of `rtts` (the endpoint's recent ones, this one included), at least COLD_DELAY_MS
 * while there are fewer than WARM_SAMPLES.
 */
export function handlerDelay(rtts: readonly number[], rttMs: number): number {
  const quickest = Math.min(...rtts);
  const delay = Math.max(0, rttMs - quickest);
  return rtts.length < WARM_SAMPLES ? Math.max(delay, COLD_DELAY_MS) : delay;
}

/** How much the handler delay varies: the largest recent delay (capped); 0 before any answer. */
export function spreadOf(delays: readonly number[]): number {
  return delays.length === 0 ? 0 : Math.min(MAX_SPREAD_MS, Math.max(...delays));
}

/** The room a stall leaves in the window at `now`: its lateness, halved every STALL_HALF_LIFE_MS since. */
export function stallAllowance(stall: Stall, now: number): number {
  if (stall.ms <= 0) return 0;
  return stall.ms * 0.5 ** ((now - stall.at) / STALL_HALF_LIFE_MS);
}

/** The stall after a timer fired `lateMs` late at `now`: the new lateness when it is more than what is left of the last. */
export function afterLateness(stall: Stall, lateMs: number, now: number): Stall {
  const late = Math.min(MAX_STALL_MS, lateMs);
  return late > 2 && late > stallAllowance(stall, now) ? { ms: late, at: now } : stall;
}

export interface ThrottlePause {
  /** 429s back to back before this one. */
  streak: number;
  windowMs: number;
  baseMs: number;
  maxMs: number;
}

/** How long every request waits after a 429: its Retry-After, else one window doubling with the streak, within base and max. */
export function throttlePauseMs(retryAfterMs: number | undefined, p: ThrottlePause): number {
  if (retryAfterMs !== undefined && retryAfterMs >= 0) return retryAfterMs;
  const windows = p.windowMs * 2 ** Math.min(p.streak, 16);
  return Math.min(p.maxMs, Math.max(p.baseMs, windows));
}
