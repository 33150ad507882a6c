import { ActivitySimulator } from './activity.js';
import { type StoreOptions, buildStore, referenceMsOf, seedSettingsOf } from './build-store.js';
import type { SeedFile } from './seed.js';
import { EmulatorClock } from './emulated-clock.js';
import { FaultInjector, type FaultSettingsPatch } from './faults.js';
import { DEFAULT_FIELD_META_SHAPE, type FieldMetaShape } from './field-meta-forms.js';
import { QueryEngine } from './query-engine.js';
import { QueryLag } from './query-lag.js';
import { type AccountRateLimiter, type RateLimitSettings, createRateLimiter } from './rate-models.js';
import { Prng } from './prng.js';
import { RequestLog } from './request-log.js';
import type { EmulatorStore } from './store.js';
import { TimerSet } from './timers.js';
import { WebhookHub } from './webhooks.js';
import { ItemHookHub } from './item-hooks.js';

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
  /** How `GET .../fields` is served (default `exported`, boolean flags). */
  fieldMeta?: Partial<FieldMetaShape>;
  /** Delay before a write shows in queries (default 0). */
  queryLagMs?: number;
}

/** Settings that can change while the emulator runs (`GET|PUT /_admin/settings`). */
export interface RuntimeSettings {
  fieldMeta: FieldMetaShape['arrangement'];
  fieldFlags: FieldMetaShape['flags'];
  queryLagMs: number;
  /**
   * How a read, update or delete of an unknown item is answered (default HTTP
   * 200 with Status 40400). Codes are undocumented: another platform may
   * answer HTTP 200 with any non-zero Status, or HTTP 404.
   */
  unknownItem: UnknownItemAnswer;
  /** Items leave out the fields whose value is empty (what some platforms do); system fields are always sent. */
  omitEmptyValues: boolean;
  /**
   * User fields `GET .../fields` marks `IsSystem: true`; a write naming one is
   * answered success and bumps the version, and the field keeps its value
   * (what the platform does with system, auto-number and calculated fields).
   */
  systemFields: string[];
  /** Fields served as usual whose writes are ignored the same way: a value the platform does not take. */
  ignoredWriteFields: string[];
  /**
   * How a multi-value field (checkbox, multi lookup) written with an array of
   * integer strings is stored and served: `bare` (the default, the strictest:
   * `[1177823559771361293,...]`, as the platform's own tooling writes IDs) or
   * `as-written`.
   */
  multiValueNumbers: MultiValueNumbers;
}

export const MULTI_VALUE_NUMBERS = ['bare', 'as-written'] as const;
export type MultiValueNumbers = (typeof MULTI_VALUE_NUMBERS)[number];

export interface UnknownItemAnswer {
  httpStatus: number;
  status: number;
}

export const DEFAULT_UNKNOWN_ITEM: Readonly<UnknownItemAnswer> = Object.freeze({ httpStatus: 200, status: 40400 });

export class EmulatorState {
  store: EmulatorStore;
  readonly idsAsNumbers: boolean;
  readonly clock: EmulatorClock;
  readonly queries = new QueryEngine();
  readonly limiter: AccountRateLimiter | null;
  /** Draws each request's delay before it is counted (the rate limit's jitter). */
  private readonly handlerDelays = new Prng(7);
  /** Draws the part of an answer's delay that is independent of when its request was counted (`countAt: 'hidden'`). */
  private readonly answerDelays = new Prng(11);
  readonly faults: FaultInjector;
  readonly log = new RequestLog();
  readonly hooks = new WebhookHub();
  readonly itemHooks: ItemHookHub;
  readonly activity: ActivitySimulator;
  readonly timers = new TimerSet();
  readonly lag: QueryLag;
  fieldMeta: FieldMetaShape;
  unknownItem: UnknownItemAnswer = { ...DEFAULT_UNKNOWN_ITEM };
  omitEmptyValues = false;
  systemFields: string[] = [];
  ignoredWriteFields: string[] = [];
  multiValueNumbers: MultiValueNumbers = 'bare';
  private readonly initial: ResetOptions;
  private readonly initialReferenceMs: number;

  constructor(init: StateInit) {
    this.initial = init.store;
    this.initialReferenceMs = init.referenceMs;
    this.store = buildStore({ ...init.store, referenceMs: init.referenceMs });
    this.idsAsNumbers = init.idsAsNumbers;
    this.itemHooks = new ItemHookHub(init.idsAsNumbers);
    this.clock = new EmulatorClock(init.now);
    this.lag = new QueryLag(() => this.clock.nowMs(), init.queryLagMs ?? 0);
    this.fieldMeta = { ...DEFAULT_FIELD_META_SHAPE, ...stripUndefined(init.fieldMeta ?? {}) };
    this.limiter = init.rateLimit === false ? null : createRateLimiter(init.rateLimit, init.rateLimitClock);
    this.faults = new FaultInjector(init.faults, Date.now());
    this.activity = new ActivitySimulator({
      store: () => this.store,
      clock: this.clock,
      hooks: this.hooks,
      lag: this.lag,
      itemHooks: this.itemHooks,
    });
  }

  /** How long a /v1 request waits before the rate limit counts it: random, up to the limit's `jitterMs`. */
  handlerDelayMs(): number {
    const jitter = this.limiter?.settings.jitterMs ?? 0;
    return jitter > 0 ? this.handlerDelays.next() * jitter : 0;
  }

  /** Whether the rate limit counts a request when its handler runs, after the request's latency (`countAt` other than `arrival`). */
  countsAfterLatency(): boolean {
    const at = this.limiter?.settings.countAt;
    return at !== undefined && at !== 'arrival';
  }

  /**
   * How long the answer of a request counted `countedAfterMs` into the jitter waits after the count:
   * with `countAt: 'hidden'`, the rest of the jitter plus an independent random part of it, so the
   * answer's timing does not show when the request was counted; else 0.
   */
  answerHoldMs(countedAfterMs: number): number {
    const s = this.limiter?.settings;
    if (s?.countAt !== 'hidden' || s.jitterMs <= 0) return 0;
    return Math.max(0, s.jitterMs - countedAfterMs) + this.answerDelays.next() * s.jitterMs;
  }

  get settings(): RuntimeSettings {
    return {
      fieldMeta: this.fieldMeta.arrangement,
      fieldFlags: this.fieldMeta.flags,
      queryLagMs: this.lag.lagMs,
      unknownItem: { ...this.unknownItem },
      omitEmptyValues: this.omitEmptyValues,
      systemFields: [...this.systemFields],
      ignoredWriteFields: [...this.ignoredWriteFields],
      multiValueNumbers: this.multiValueNumbers,
    };
  }

  /** Changes the runtime settings given (validated by the caller). */
  updateSettings(patch: Partial<RuntimeSettings>): RuntimeSettings {
    if (patch.queryLagMs !== undefined) this.lag.lagMs = patch.queryLagMs;
    if (patch.fieldMeta !== undefined) this.fieldMeta = { ...this.fieldMeta, arrangement: patch.fieldMeta };
    if (patch.fieldFlags !== undefined) this.fieldMeta = { ...this.fieldMeta, flags: patch.fieldFlags };
    if (patch.unknownItem !== undefined) this.unknownItem = { ...patch.unknownItem };
    if (patch.omitEmptyValues !== undefined) this.omitEmptyValues = patch.omitEmptyValues;
    if (patch.systemFields !== undefined) this.systemFields = [...patch.systemFields];
    if (patch.ignoredWriteFields !== undefined) this.ignoredWriteFields = [...patch.ignoredWriteFields];
    if (patch.multiValueNumbers !== undefined) this.multiValueNumbers = patch.multiValueNumbers;
    return this.settings;
  }

  /**
   * Rebuilds the data. An empty body restores the start options. Otherwise the
   * body's options apply; the current API keys and time zone stay unless the
   * body (or its seed) gives new ones, and the reference date stays unless
   * given. Subscriptions, deliveries and activity are dropped; faults, the
   * clock, the request log and the runtime settings (field metadata shape,
   * query lag) are kept unless the body's seed sets them.
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
    // The start options' seed settings are already in force (or overridden by start options).
    const fromSeed = base === this.initial ? {} : seedSettingsOf(base.seed as SeedFile | undefined);
    const ref = base.referenceDate;
    let referenceMs = this.initialReferenceMs;
    if (ref !== undefined) referenceMs = new Date(ref).getTime();
    else if (fromSeed.referenceDate !== undefined) referenceMs = referenceMsOf(fromSeed.referenceDate);
    if (!Number.isFinite(referenceMs)) throw new RangeError(`referenceDate: not a date (${String(ref)})`);
    const store = buildStore({ ...stripUndefined(base), referenceMs });
    this.updateSettings({
      ...(fromSeed.fieldMeta === undefined ? {} : { fieldMeta: fromSeed.fieldMeta }),
      ...(fromSeed.fieldFlags === undefined ? {} : { fieldFlags: fromSeed.fieldFlags }),
      ...(fromSeed.queryLagMs === undefined ? {} : { queryLagMs: fromSeed.queryLagMs }),
    });
    this.activity.stop();
    this.store = store;
    this.queries.clear();
    this.limiter?.reset();
    this.hooks.reset();
    this.itemHooks.reset();
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
    this.itemHooks.close();
  }
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
