/**
 * The account's rate limit, per API key, in each form the platform may keep
 * it (spec/platform-facts.md: the algorithm is not documented):
 *
 * - `sliding` (the default, the strictest): at most `burst` requests in any
 *   window of `burst / perSecond` seconds, as the handler sees them;
 * - `bucket`: a token bucket of `burst` tokens refilled at `perSecond`;
 * - `fixed`: at most `burst` requests in each window of `burst / perSecond`
 *   seconds counted from the epoch (two windows' worth may straddle a border).
 *
 * A request is counted when its handler runs, after a random delay of up to
 * `jitterMs` (DEFAULT_RATE_JITTER_MS; `http-server.ts` sleeps it): requests
 * sent close together reach the count in an order and spacing the client does
 * not control. `countAt` says when the handler runs:
 *
 * - `hidden` (the strictest): after the request's whole latency (`--latency`,
 *   `--jitter`) and a random part of the jitter, while its answer leaves the
 *   whole jitter plus another, independent random part of it after the
 *   latency. The round trips show how much the handler delay varies, never
 *   when one request was counted: a client must keep requests a window plus
 *   that variation apart (a platform whose handler runs 200-240 ms after
 *   arrival, its answer's timing not tied to the count);
 * - `handler` (the default): after the latency and a random part of the
 *   jitter, answered right after, so a round trip shows when its request was
 *   counted (the tests' answer times stay those of the latency);
 * - `arrival`: on arrival plus the jitter; the latency follows the count.
 * A refused request is not counted; it is answered with the whole
 * seconds until one would be allowed (at least 1). Tests:
 * test/emulator/rate-limit.test.ts.
 */
export const RATE_MODELS = ['sliding', 'bucket', 'fixed'] as const;
export type RateModel = (typeof RATE_MODELS)[number];

export function isRateModel(v: string): v is RateModel {
  return (RATE_MODELS as readonly string[]).includes(v);
}

/** When the limit counts a request: when its handler runs (after the latency; its answer's timing tied to it or not), or on arrival. */
export const RATE_COUNT_POINTS = ['hidden', 'handler', 'arrival'] as const;
export type RateCountPoint = (typeof RATE_COUNT_POINTS)[number];

export function isRateCountPoint(v: string): v is RateCountPoint {
  return (RATE_COUNT_POINTS as readonly string[]).includes(v);
}

export interface RateLimitSettings {
  burst: number;
  perSecond: number;
  /** How the limit is kept (default `sliding`). */
  model?: RateModel;
  /** Each request is counted after a random delay of up to this many ms (default DEFAULT_RATE_JITTER_MS). */
  jitterMs?: number;
  /** When a request is counted (default `handler`: after its latency and part of the jitter; `hidden`: its answer does not show when). */
  countAt?: RateCountPoint;
}

/** The strictest default: a sliding second, counted when the handler runs, after the latency and a delay of up to 20 ms. */
export const DEFAULT_RATE_JITTER_MS = 20;

export const DEFAULT_RATE_LIMIT: Readonly<Required<RateLimitSettings>> = Object.freeze({
  burst: 10,
  perSecond: 10,
  model: 'sliding',
  jitterMs: DEFAULT_RATE_JITTER_MS,
  countAt: 'handler',
});

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** One form of the limit; `take` counts a request that is allowed. */
export interface AccountRateLimiter {
  readonly settings: Readonly<Required<RateLimitSettings>>;
  take(key: string): RateDecision;
  reset(): void;
}

function checked(settings: RateLimitSettings): Required<RateLimitSettings> {
  if (!(settings.burst >= 1) || !(settings.perSecond > 0)) {
    throw new RangeError(`rateLimit: burst must be >= 1 and perSecond > 0 (got ${JSON.stringify(settings)})`);
  }
  const model = settings.model ?? 'sliding';
  if (!isRateModel(model)) throw new RangeError(`rateLimit.model: expected one of ${RATE_MODELS.join(', ')} (got ${String(model)})`);
  const jitterMs = settings.jitterMs ?? DEFAULT_RATE_JITTER_MS;
  if (!(jitterMs >= 0) || jitterMs > 60_000) throw new RangeError(`rateLimit.jitterMs: expected 0 to 60000 ms (got ${jitterMs})`);
  const countAt = settings.countAt ?? 'handler';
  if (!isRateCountPoint(countAt))
    throw new RangeError(`rateLimit.countAt: expected one of ${RATE_COUNT_POINTS.join(', ')} (got ${String(countAt)})`);
  return { burst: settings.burst, perSecond: settings.perSecond, model, jitterMs, countAt };
}

const waitSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/** The limit in the form its settings name. */
export function createRateLimiter(settings: RateLimitSettings, nowMs: () => number = () => performance.now()): AccountRateLimiter {
  const s = checked(settings);
  if (s.model === 'bucket') return new TokenBucketLimiter(s, nowMs);
  if (s.model === 'fixed') return new FixedWindowLimiter(s, nowMs);
  return new SlidingWindowLimiter(s, nowMs);
}

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBucketLimiter implements AccountRateLimiter {
  readonly settings: Readonly<Required<RateLimitSettings>>;
  private readonly buckets = new Map<string, Bucket>();
  private readonly nowMs: () => number;

  constructor(settings: RateLimitSettings, nowMs: () => number = () => performance.now()) {
    this.settings = { ...checked(settings), model: 'bucket' };
    this.nowMs = nowMs;
  }

  take(key: string): RateDecision {
    const now = this.nowMs();
    const { burst, perSecond } = this.settings;
    let b = this.buckets.get(key);
    if (!b) {
      b = { tokens: burst, at: now };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond);
      b.at = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: waitSeconds(((1 - b.tokens) / perSecond) * 1000) };
  }

  reset(): void {
    this.buckets.clear();
  }
}

/** At most `burst` requests in any `burst / perSecond` s: a log of the counted requests' times. */
export class SlidingWindowLimiter implements AccountRateLimiter {
  readonly settings: Readonly<Required<RateLimitSettings>>;
  private readonly logs = new Map<string, number[]>();
  private readonly nowMs: () => number;
  private readonly windowMs: number;

  constructor(settings: RateLimitSettings, nowMs: () => number = () => performance.now()) {
    this.settings = { ...checked(settings), model: 'sliding' };
    this.nowMs = nowMs;
    this.windowMs = (this.settings.burst / this.settings.perSecond) * 1000;
  }

  take(key: string): RateDecision {
    const now = this.nowMs();
    const cap = Math.floor(this.settings.burst);
    let log = this.logs.get(key);
    if (!log) this.logs.set(key, (log = []));
    // A request exactly one window after another no longer shares a window with it.
    while (log.length > 0 && log[0]! <= now - this.windowMs) log.shift();
    if (log.length < cap) {
      log.push(now);
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: waitSeconds(log[0]! + this.windowMs - now) };
  }

  reset(): void {
    this.logs.clear();
  }
}

/** At most `burst` requests in each window of `burst / perSecond` s counted from time 0. */
export class FixedWindowLimiter implements AccountRateLimiter {
  readonly settings: Readonly<Required<RateLimitSettings>>;
  private readonly windows = new Map<string, { index: number; count: number }>();
  private readonly nowMs: () => number;
  private readonly windowMs: number;

  constructor(settings: RateLimitSettings, nowMs: () => number = () => performance.now()) {
    this.settings = { ...checked(settings), model: 'fixed' };
    this.nowMs = nowMs;
    this.windowMs = (this.settings.burst / this.settings.perSecond) * 1000;
  }

  take(key: string): RateDecision {
    const now = this.nowMs();
    const index = Math.floor(now / this.windowMs);
    let w = this.windows.get(key);
    if (!w || w.index !== index) this.windows.set(key, (w = { index, count: 0 }));
    if (w.count < Math.floor(this.settings.burst)) {
      w.count++;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: waitSeconds((index + 1) * this.windowMs - now) };
  }

  reset(): void {
    this.windows.clear();
  }
}
