import { ActivitySimulator } from './activity.js';
import { type StoreOptions, buildStore } from './build-store.js';
import { EmulatorClock } from './clock.js';
import { FaultInjector, type FaultSettingsPatch } from './faults.js';
import { QueryEngine } from './query-engine.js';
import { type RateLimitSettings, TokenBucketLimiter } from './rate-limiter.js';
import { RequestLog } from './request-log.js';
import type { EmulatorStore } from './store.js';
import { TimerSet } from './timers.js';
import { WebhookHub } from './webhooks.js';

/**
 * Everything a running emulator holds: the data (replaced on reset), the
 * clock, the query cache, the rate limiter, faults, the request log, webhooks
 * and simulated activity.
 */

/** What `POST /_admin/reset` accepts (and what the store is first built from). */
export type ResetOptions = Omit<StoreOptions, 'referenceMs'> & { referenceDate?: string | Date };

export interface StateInit {
  store: ResetOptions;
  referenceMs: number;
  idsAsNumbers: boolean;
  rateLimit: RateLimitSettings | false;
  rateLimitClock: (() => number) | undefined;
  faults: FaultSettingsPatch | undefined;
  now: (() => Date) | undefined;
}

export class EmulatorState {
  store: EmulatorStore;
  readonly idsAsNumbers: boolean;
  readonly clock: EmulatorClock;
  readonly queries = new QueryEngine();
  readonly limiter: TokenBucketLimiter | null;
  readonly faults: FaultInjector;
  readonly log = new RequestLog();
  readonly hooks = new WebhookHub();
  readonly activity: ActivitySimulator;
  readonly timers = new TimerSet();
  private readonly initial: ResetOptions;
  private readonly initialReferenceMs: number;

  constructor(init: StateInit) {
    this.initial = init.store;
    this.initialReferenceMs = init.referenceMs;
    this.store = buildStore({ ...init.store, referenceMs: init.referenceMs });
    this.idsAsNumbers = init.idsAsNumbers;
    this.clock = new EmulatorClock(init.now);
    this.limiter = init.rateLimit === false ? null : new TokenBucketLimiter(init.rateLimit, init.rateLimitClock);
    this.faults = new FaultInjector(init.faults, Date.now());
    this.activity = new ActivitySimulator({ store: () => this.store, clock: this.clock, hooks: this.hooks });
  }

  /**
   * Rebuilds the data. An empty body restores the start options. Otherwise the
   * body's options apply; the current API keys and time zone stay unless the
   * body (or its seed) gives new ones, and the reference date stays unless
   * given. Subscriptions, deliveries and activity are dropped; faults, the
   * clock and the request log are kept.
   */
  reset(opts: ResetOptions): EmulatorStore {
    let base: ResetOptions;
    if (Object.keys(opts).length === 0) base = this.initial;
    else {
      const seed = (typeof opts.seed === 'object' && opts.seed !== null ? opts.seed : {}) as Record<string, unknown>;
      base = {
        ...opts,
        apiKeys: opts.apiKeys ?? (seed['apiKeys'] === undefined ? [...this.store.apiKeys] : undefined),
        timeZone: opts.timeZone ?? (seed['timeZone'] === undefined ? this.store.zone.name : undefined),
      };
    }
    const ref = base.referenceDate;
    const referenceMs = ref === undefined ? this.initialReferenceMs : new Date(ref).getTime();
    if (!Number.isFinite(referenceMs)) throw new RangeError(`referenceDate: not a date (${String(ref)})`);
    const store = buildStore({ ...stripUndefined(base), referenceMs });
    this.activity.stop();
    this.store = store;
    this.queries.clear();
    this.limiter?.reset();
    this.hooks.reset();
    return store;
  }

  /** Now, as an instant and in platform naive seconds. */
  now(): { ms: number; naive: number } {
    const ms = this.clock.nowMs();
    return { ms, naive: this.store.zone.naiveFromMs(ms) };
  }

  close(): void {
    this.activity.stop();
    this.timers.clearAll();
    this.hooks.close();
  }
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
