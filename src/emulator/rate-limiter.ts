/**
 * Token bucket per API key: `burst` tokens, refilled at `perSecond`. A request
 * takes one token; without one it is refused with the whole seconds to wait.
 */
export interface RateLimitSettings {
  burst: number;
  perSecond: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitSettings = { burst: 10, perSecond: 10 };

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBucketLimiter {
  readonly settings: RateLimitSettings;
  private readonly buckets = new Map<string, Bucket>();
  private readonly nowMs: () => number;

  constructor(settings: RateLimitSettings, nowMs: () => number = () => performance.now()) {
    if (!(settings.burst >= 1) || !(settings.perSecond > 0)) {
      throw new RangeError(`rateLimit: burst must be >= 1 and perSecond > 0 (got ${JSON.stringify(settings)})`);
    }
    this.settings = settings;
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
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - b.tokens) / perSecond)) };
  }

  reset(): void {
    this.buckets.clear();
  }
}
