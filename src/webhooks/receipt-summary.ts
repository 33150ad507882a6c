/**
 * What the receiver stored, told in summary lines: a burst of 20,000 callbacks
 * (and the platform's copies of them) costs one log line per `everyMs`, not
 * one per delivery. A new event after a quiet spell is logged whole (a quiet
 * system still shows each event); the others of the spell only at debug level.
 *
 * Invariants:
 * - every accepted callback is told once at info: whole (the first new one of
 *   a spell) or counted, as new or as a duplicate, in a summary line that says
 *   how many of each since the previous one, per subscription; nothing is
 *   logged while nothing arrives;
 * - the counts of a burst are logged at most `everyMs` after its last
 *   callback (the timer is unref'd: it never keeps a process alive).
 * (burst.test.ts: duplicated deliveries cost summary lines, not a line each.)
 */
import type { Logger } from '../logger.js';

interface Counts {
  stored: number;
  duplicates: number;
}

export class ReceiptSummary {
  private counts = new Map<number, Counts>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: Logger,
    private readonly everyMs: number,
  ) {}

  /**
   * Takes one accepted callback of the subscription: 'log' for a new event after a quiet spell (the
   * caller logs it whole, at info), else 'counted' for the next summary.
   */
  add(subscriptionId: number, duplicate: boolean): 'log' | 'counted' {
    if (!duplicate && this.timer === null) {
      this.arm();
      return 'log';
    }
    const c = this.counts.get(subscriptionId) ?? { stored: 0, duplicates: 0 };
    if (duplicate) c.duplicates++;
    else c.stored++;
    this.counts.set(subscriptionId, c);
    this.arm();
    return 'counted';
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => this.flush(), this.everyMs);
    this.timer.unref();
  }

  /** Logs what was counted since the last summary (nothing when nothing came). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.counts.size === 0) return;
    const counted = this.counts;
    this.counts = new Map();
    for (const [subscription, c] of counted)
      this.log.info(
        { subscription, stored: c.stored, duplicates: c.duplicates },
        c.duplicates
          ? `webhook events stored: ${c.stored} new, ${c.duplicates} duplicate deliveries (stored once)`
          : `webhook events stored: ${c.stored} new`,
      );
  }
}
