/**
 * A clock the test drives: `sleep` registers a timer, `run()` fires timers in
 * time order (flushing promise jobs in between) so code that loops on
 * `clock.sleep` runs to completion without real waiting.
 */
import type { Clock } from '../../src/platform/clock.js';

interface Timer {
  at: number;
  seq: number;
  resolve: () => void;
}

export class ManualClock implements Clock {
  private t: number;
  private seq = 0;
  private timers: Timer[] = [];

  /** `lateness(at)` returns how many ms after its due time a timer fires (simulates a busy event loop). */
  constructor(
    start = 1_700_000_000_000,
    private readonly lateness: () => number = () => 0,
  ) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const timer: Timer = { at: this.t + Math.max(0, ms) + this.lateness(), seq: this.seq++, resolve };
      this.timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.timers = this.timers.filter((x) => x !== timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  advance(ms: number): void {
    this.t += ms;
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  /** Fires due timers in order until none is left (or the next is after `until`). */
  async run(until = Infinity): Promise<void> {
    for (let guard = 0; guard < 1_000_000; guard++) {
      await flush();
      if (this.timers.length === 0) return;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0]!;
      if (next.at > until) {
        this.t = Math.max(this.t, until);
        return;
      }
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.resolve();
    }
    throw new Error('ManualClock.run: too many timers');
  }
}

export async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
}

/** Most timestamps within any window [t, t + windowMs) (the server's sliding second). */
export function maxInSlidingWindow(times: readonly number[], windowMs = 1000): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}
