import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ActivitySettings } from './activity.js';
import { EmulatorAdminClient } from './admin-client.js';
import { referenceMsOf, seedSettingsOf } from './build-store.js';
import { EmulatorState, type RuntimeSettings } from './emulator-state.js';
import type { FieldFlagStyle, FieldMetaArrangement } from './field-meta-forms.js';
import type { FaultSettingsPatch } from './faults.js';
import { DEFAULT_RATE_LIMIT, type RateCountPoint, type RateLimitSettings, type RateModel } from './rate-models.js';
import { type SeedFile, loadSeedFile } from './seed.js';
import { withManyLists } from './many-lists.js';
import { createRequestListener } from './http-server.js';

/**
 * The platform emulator: a real HTTP server that behaves like the platform's
 * /v1 API (see shared/spec), plus an admin API under /_admin.
 */

export interface EmulatorOptions {
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Include the sample `demo/orders` list (default: when no seed is given). */
  sample?: boolean;
  /** Sample item count (default 5000); with `lists`, the item count of each generated list. */
  items?: number;
  /** Generated lists `bench/l001`... (many-lists.ts) beside the seed's, `items` items each (default 1000); the sample list only when asked. */
  lists?: number;
  /** Days before the reference date that generated items' Created dates spread over (default 400). */
  spanDays?: number;
  /** Seed of the generated data (default 1). */
  seedNumber?: number;
  /** A seed file's content (validated). */
  seed?: SeedFile;
  /** Path of a JSON seed file (used when `seed` is not given). */
  seedFile?: string;
  /** Platform time zone for Created/Modified (default UTC). */
  timeZone?: string;
  /** Accepted API keys (default ["emulator-key"]). */
  apiKeys?: string[];
  /**
   * The limit per key (default 10 in any sliding second, each request counted
   * when its handler runs: after its latency and a random delay of up to
   * 20 ms); false disables. `rateModel`, `rateJitterMs` and `rateCountAt`
   * override its model, delay and count point.
   */
  rateLimit?: RateLimitSettings | false;
  /** How the limit is kept: `sliding` (default, the strictest), `bucket` or `fixed`. */
  rateModel?: RateModel;
  /** Each /v1 request is counted by the limit after a random delay of up to this many ms (default 20). */
  rateJitterMs?: number;
  /** When the limit counts a request: `handler` (default, after the latency) or `arrival`. */
  rateCountAt?: RateCountPoint;
  /** Monotonic ms clock of the rate limiter (default performance.now; tests freeze it to fire "in the same instant"). */
  rateLimitClock?: () => number;
  /** Write ListDataID as a bare JSON number in item reads. */
  idsAsNumbers?: boolean;
  faults?: FaultSettingsPatch;
  activity?: ActivitySettings | null;
  /** Clock for new changes (default: real time). */
  now?: () => Date;
  /**
   * Instant generated data is anchored to: a Date, or a day `YYYY-MM-DD`
   * (its start in UTC). Default: the seed's `referenceDate`, else the start of
   * today UTC per `now`. Pin it to keep generated data the same day to day.
   */
  referenceDate?: Date | string;
  /** How `GET .../fields` arranges storage kind and control (default: the seed's, else `exported`). */
  fieldMeta?: FieldMetaArrangement;
  /** How the field flags (IsIndex...) are written (default: the seed's, else booleans). */
  fieldFlags?: FieldFlagStyle;
  /** A write shows in `items/query` only this many ms later (default: the seed's, else 0). */
  queryLagMs?: number;
}

/** What the emulator holds: for the start banner and health views. */
export interface EmulatorSummary {
  timeZone: string;
  referenceDate: string;
  lists: Array<{ appID: string; listID: string; title: string; count: number }>;
  users: number;
  settings: RuntimeSettings;
}

export interface RunningEmulator {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** `url + '/v1'` */
  baseUrl: string;
  /** The first API key. */
  apiKey: string;
  admin: EmulatorAdminClient;
  summary(): EmulatorSummary;
  close(): Promise<void>;
}

function startOfUtcDay(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
}

function referenceInstant(given: Date | string | undefined, now: () => Date): number {
  if (given === undefined) return startOfUtcDay(now()).getTime();
  const ms = typeof given === 'string' ? referenceMsOf(given) : given.getTime();
  if (!Number.isFinite(ms)) throw new RangeError(`referenceDate: not a date (${String(given)})`);
  return ms;
}

function summarize(state: EmulatorState): EmulatorSummary {
  const store = state.store;
  return {
    timeZone: store.zone.name,
    referenceDate: new Date(store.referenceMs).toISOString().slice(0, 10),
    lists: [...store.lists.values()].map((l) => ({ appID: l.appID, listID: l.listID, title: l.title, count: l.count })),
    users: store.users.length,
    settings: state.settings,
  };
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

function rateLimitOf(opts: EmulatorOptions): RateLimitSettings | false {
  if (opts.rateLimit === false) return false;
  return {
    ...DEFAULT_RATE_LIMIT,
    ...opts.rateLimit,
    ...(opts.rateModel === undefined ? {} : { model: opts.rateModel }),
    ...(opts.rateJitterMs === undefined ? {} : { jitterMs: opts.rateJitterMs }),
    ...(opts.rateCountAt === undefined ? {} : { countAt: opts.rateCountAt }),
  };
}

export async function startEmulator(opts: EmulatorOptions = {}): Promise<RunningEmulator> {
  const seeded = opts.seed ?? (opts.seedFile === undefined ? undefined : await loadSeedFile(opts.seedFile));
  const seed = opts.lists ? withManyLists(seeded, opts.lists, opts.items ?? 1000) : seeded;
  const now = opts.now ?? (() => new Date());
  const fromSeed = seedSettingsOf(seed);
  const referenceMs = referenceInstant(opts.referenceDate ?? fromSeed.referenceDate, now);
  const state = new EmulatorState({
    store: {
      ...(opts.sample === undefined ? {} : { sample: opts.sample }),
      ...(opts.items === undefined || opts.lists ? {} : { items: opts.items }),
      ...(opts.spanDays === undefined ? {} : { spanDays: opts.spanDays }),
      ...(opts.seedNumber === undefined ? {} : { seedNumber: opts.seedNumber }),
      ...(seed === undefined ? {} : { seed }),
      ...(opts.timeZone === undefined ? {} : { timeZone: opts.timeZone }),
      ...(opts.apiKeys === undefined ? {} : { apiKeys: opts.apiKeys }),
    },
    referenceMs,
    idsAsNumbers: opts.idsAsNumbers ?? false,
    rateLimit: rateLimitOf(opts),
    rateLimitClock: opts.rateLimitClock,
    faults: opts.faults,
    now: opts.now,
    fieldMeta: { arrangement: opts.fieldMeta ?? fromSeed.fieldMeta, flags: opts.fieldFlags ?? fromSeed.fieldFlags },
    queryLagMs: opts.queryLagMs ?? fromSeed.queryLagMs,
  });
  if (opts.activity) state.activity.start(opts.activity);

  const server = createServer(createRequestListener(state));
  server.keepAliveTimeout = 5000;
  const host = opts.host ?? '127.0.0.1';
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    state.close();
    throw e;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${urlHost(host)}:${port}`;
  let closing: Promise<void> | undefined;
  return {
    url,
    baseUrl: `${url}/v1`,
    apiKey: state.store.apiKeys[0] as string,
    admin: new EmulatorAdminClient(url),
    summary: () => summarize(state),
    close(): Promise<void> {
      closing ??= new Promise<void>((resolve) => {
        state.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

export { EmulatorAdminClient, EmulatorAdminError } from './admin-client.js';
export type { ActivityState, ClockState, ExportedList, ResetResult } from './admin-client.js';
export type { ActivityCounts, ActivitySettings } from './activity.js';
export { DEFAULT_API_KEY, DEFAULT_TIME_ZONE } from './build-store.js';
export type { ResetOptions, RuntimeSettings } from './emulator-state.js';
export { FIELD_FLAG_STYLES, FIELD_META_ARRANGEMENTS } from './field-meta-forms.js';
export type { FieldFlagStyle, FieldMetaArrangement } from './field-meta-forms.js';
export { DEFAULT_FAULTS } from './faults.js';
export { DEFAULT_ITEM_DELIVERY, ITEM_EVENT_TYPES } from './item-hooks.js';
export type { ItemDeliverySettings, ItemDeliveryStats, ItemHook } from './item-hooks.js';
export type { FaultSettings, FaultSettingsPatch } from './faults.js';
export type { FieldMeta, FieldSpec } from './field-types.js';
export { OPERATORS } from './query-engine.js';
export { DEFAULT_RATE_JITTER_MS, DEFAULT_RATE_LIMIT, RATE_MODELS } from './rate-models.js';
export type { RateLimitSettings, RateModel } from './rate-models.js';
export type { EmulatorStats, RequestLogEntry } from './request-log.js';
export { SAMPLE_APP_ID, SAMPLE_FIELDS, SAMPLE_LIST_ID, SAMPLE_STATUSES, SAMPLE_TAGS } from './sample.js';
export { SeedError, loadSeedFile, parseSeedFile } from './seed.js';
export type { SeedFile } from './seed.js';
export type { ItemRecord, User } from './store.js';
export type { HookDelivery, HookEventBody, HookSubscription } from './webhooks.js';
