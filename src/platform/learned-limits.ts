/**
 * What the request limiter has learned about the account's limit from 429
 * answers, kept per account in `listsync.rate_budget` (migration
 * 20261128000400_rate_budget_learned) so the next process starts from it.
 *
 * - `burstsAllowed`: requests may leave together (up to `platform.burst`)
 *   only while no 429 has been seen lately: a strict sliding second counted
 *   after a varying delay punishes bursts first.
 * - `marginMs`: extra width of the sliding window, on top of
 *   `platform.rateMargin`; each 429 widens it by MARGIN_STEP_MS (at most
 *   MAX_MARGIN_MS).
 * - Both relax slowly while no 429 comes: the margin halves every
 *   RELAX_HALF_LIFE_MS since the last one, bursts come back after
 *   BURSTS_BACK_AFTER_MS.
 * - `limitTooHighAt`: when 429s kept coming at the widened margin, so the
 *   rate was halved: the configured `requestsPerSecond` is likely above the
 *   platform's limit (shown by `status`).
 *
 * Pure functions of the state and a time (epoch ms). Tests:
 * test/platform/rate-limiter.test.ts ("learned").
 */
export interface LearnedLimits {
  burstsAllowed: boolean;
  marginMs: number;
  throttledTotal: number;
  /** Epoch ms of the last 429 counted (null: never). */
  lastThrottledAt: number | null;
  /** Epoch ms when 429s kept coming at the widened margin and the rate was halved (null: never). */
  limitTooHighAt: number | null;
}

export const MARGIN_STEP_MS = 20;
export const MAX_MARGIN_MS = 200;
export const RELAX_HALF_LIFE_MS = 15 * 60_000;
export const BURSTS_BACK_AFTER_MS = 30 * 60_000;

export const INITIAL_LEARNED: Readonly<LearnedLimits> = Object.freeze({
  burstsAllowed: true,
  marginMs: 0,
  throttledTotal: 0,
  lastThrottledAt: null,
  limitTooHighAt: null,
});

/** The state as it stands at `now`: the margin halved for every half-life since the last 429, bursts back after a while. */
export function relaxed(l: LearnedLimits, now: number): LearnedLimits {
  if (l.lastThrottledAt === null) return { ...l };
  const since = Math.max(0, now - l.lastThrottledAt);
  const margin = l.marginMs * 0.5 ** (since / RELAX_HALF_LIFE_MS);
  return {
    ...l,
    marginMs: margin < 1 ? 0 : Math.round(margin),
    burstsAllowed: l.burstsAllowed || since >= BURSTS_BACK_AFTER_MS,
  };
}

/** After a 429: no bursts, a wider margin, counted. */
export function afterThrottle(l: LearnedLimits, now: number): LearnedLimits {
  const r = relaxed(l, now);
  return {
    ...r,
    burstsAllowed: false,
    marginMs: Math.min(MAX_MARGIN_MS, r.marginMs + MARGIN_STEP_MS),
    throttledTotal: r.throttledTotal + 1,
    lastThrottledAt: now,
  };
}
