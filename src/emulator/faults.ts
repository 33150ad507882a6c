import { z } from 'zod';
import { Prng } from './prng.js';
import { formatZodIssues } from './validation.js';

/**
 * Fault injection for /v1 requests: latency, 5xx errors, timeouts, dropped
 * connections, malformed bodies, rate-limit storms and broken pages. Random
 * decisions come from a seeded source (`faultSeed`), so a test that sends the
 * same requests in the same order sees the same faults.
 */

export interface FaultSettings {
  latencyMs: number;
  jitterMs: number;
  /** Fraction of requests answered 500/502/503 (HTML or envelope body). */
  errorRate: number;
  /** Fraction of requests held `timeoutMs` and then cut without an answer. */
  timeoutRate: number;
  timeoutMs: number;
  /** Fraction of requests whose connection is destroyed right after the request is read. */
  dropRate: number;
  /** Fraction of requests answered HTTP 200 with truncated JSON. */
  malformedRate: number;
  /**
   * The next N writes (POST, PATCH, DELETE) are applied and then their
   * connection is dropped without an answer: a lost answer, on purpose.
   */
  loseWriteAnswers: number;
  /**
   * Every item update (PATCH) is applied at once and answered this many ms
   * later (0: at once): a platform slower than the client's timeout, whose
   * writes went through nevertheless.
   */
  updateAnswerDelayMs: number;
  /** Every request is answered 429 until this instant (epoch ms). */
  rateLimitStorm: { untilMs: number } | null;
  /**
   * The Nth /v1 request counted from when this is set (1 = the next one) is
   * answered 429 with Retry-After 1, once, as the rate limit would; then the
   * setting clears itself. Requests outside `faultPaths` are not counted.
   */
  rateLimitAtRequest: number | null;
  /** PageIndex values for which items/query answers `Data: []` with the real TotalCount. */
  emptyPages: number[];
  /** A well-formed but wrong items/query answer, on demand (see PageFaultKind). */
  pageFault: PageFault | null;
  /** Regular expression: faults apply only to /v1 paths it matches. */
  faultPaths: string | null;
  faultSeed: number;
}

/**
 * Wrong answers a real server might give to items/query, each well-formed:
 *
 * - `shortPage`: page `page` (default 2) loses the second half of its items;
 * - `lowTotal`: TotalCount is `count` (default 1) lower than the matching items;
 * - `duplicate`: page `page` (default 2) starts with the last item of the page before it
 *   instead of its own first item (which is never served);
 * - `ignorePageIndex`: every PageIndex answers page 1 (TotalCount as usual);
 * - `ignorePageIndexNoTotal`: the same, without TotalCount;
 * - `nullData`: `Data: null` and no TotalCount;
 * - `missingId`: the first item of page `page` (default 1) has no ListDataID;
 * - `unknownStatus`: HTTP 200 with Status 50010 once, then the fault clears itself.
 */
export const PAGE_FAULT_KINDS = [
  'shortPage',
  'lowTotal',
  'duplicate',
  'ignorePageIndex',
  'ignorePageIndexNoTotal',
  'nullData',
  'missingId',
  'unknownStatus',
] as const;
export type PageFaultKind = (typeof PAGE_FAULT_KINDS)[number];
export interface PageFault {
  kind: PageFaultKind;
  page?: number;
  count?: number;
}

/**
 * A partial update: `null` restores a setting's default. `rateLimitStorm` also
 * takes a duration (ms from now, or `{durationMs}`).
 */
export type FaultSettingsPatch = {
  [K in Exclude<keyof FaultSettings, 'rateLimitStorm'>]?: FaultSettings[K] | null;
} & { rateLimitStorm?: { untilMs: number } | { durationMs: number } | number | null };

export const DEFAULT_FAULTS: Readonly<FaultSettings> = Object.freeze({
  latencyMs: 0,
  jitterMs: 0,
  errorRate: 0,
  timeoutRate: 0,
  timeoutMs: 10_000,
  dropRate: 0,
  malformedRate: 0,
  loseWriteAnswers: 0,
  updateAnswerDelayMs: 0,
  rateLimitStorm: null,
  rateLimitAtRequest: null,
  emptyPages: [],
  pageFault: null,
  faultPaths: null,
  faultSeed: 1,
});

const rate = z.number().min(0).max(1);
const ms = z.number().min(0).max(3_600_000);
const patchSchema = z.strictObject({
  latencyMs: ms.nullable().optional(),
  jitterMs: ms.nullable().optional(),
  errorRate: rate.nullable().optional(),
  timeoutRate: rate.nullable().optional(),
  timeoutMs: ms.nullable().optional(),
  dropRate: rate.nullable().optional(),
  malformedRate: rate.nullable().optional(),
  loseWriteAnswers: z.number().int().min(0).max(1_000_000).nullable().optional(),
  updateAnswerDelayMs: ms.nullable().optional(),
  rateLimitStorm: z
    .union([ms, z.strictObject({ untilMs: z.number() }), z.strictObject({ durationMs: ms })])
    .nullable()
    .optional(),
  rateLimitAtRequest: z.number().int().min(1).max(1_000_000).nullable().optional(),
  emptyPages: z.array(z.number().int().min(0)).nullable().optional(),
  pageFault: z
    .strictObject({ kind: z.enum(PAGE_FAULT_KINDS), page: z.number().int().min(1).optional(), count: z.number().int().min(1).optional() })
    .nullable()
    .optional(),
  faultPaths: z
    .string()
    .refine((s) => {
      try {
        new RegExp(s);
        return true;
      } catch {
        return false;
      }
    }, 'not a valid regular expression')
    .nullable()
    .optional(),
  faultSeed: z.number().int().nullable().optional(),
});

export class FaultSettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FaultSettingsError';
  }
}

/** Applies a patch to settings; throws FaultSettingsError naming the bad key. */
export function mergeFaults(current: FaultSettings, patch: unknown, nowMs: number): FaultSettings {
  const parsed = patchSchema.safeParse(patch ?? {});
  if (!parsed.success) throw new FaultSettingsError(`Invalid fault settings:\n${formatZodIssues(parsed.error, 'faults')}`);
  const next: FaultSettings = { ...current, emptyPages: [...current.emptyPages] };
  const p = parsed.data;
  const nums = [
    'latencyMs',
    'jitterMs',
    'errorRate',
    'timeoutRate',
    'timeoutMs',
    'dropRate',
    'malformedRate',
    'loseWriteAnswers',
    'updateAnswerDelayMs',
    'faultSeed',
  ] as const;
  for (const k of nums) {
    const v = p[k];
    if (v === null) next[k] = DEFAULT_FAULTS[k];
    else if (v !== undefined) next[k] = v;
  }
  if (p.emptyPages === null) next.emptyPages = [];
  else if (p.emptyPages !== undefined) next.emptyPages = p.emptyPages.map((n) => Math.max(1, n));
  if (p.pageFault === null) next.pageFault = null;
  else if (p.pageFault !== undefined) next.pageFault = { ...p.pageFault };
  if (p.rateLimitAtRequest !== undefined) next.rateLimitAtRequest = p.rateLimitAtRequest;
  if (p.faultPaths === null) next.faultPaths = null;
  else if (p.faultPaths !== undefined) next.faultPaths = p.faultPaths;
  const storm = p.rateLimitStorm;
  if (storm === null) next.rateLimitStorm = null;
  else if (typeof storm === 'number') next.rateLimitStorm = { untilMs: nowMs + storm };
  else if (storm !== undefined)
    next.rateLimitStorm = 'untilMs' in storm ? { untilMs: storm.untilMs } : { untilMs: nowMs + storm.durationMs };
  return next;
}

export type FaultKind = 'drop' | 'timeout' | 'error' | 'malformed';

export interface FaultDecision {
  kind: FaultKind | null;
  /** For writes: the drop or timeout happens after the change was applied. */
  afterApply: boolean;
  errorStatus: number;
  htmlBody: boolean;
}

const NO_FAULT: FaultDecision = Object.freeze({ kind: null, afterApply: false, errorStatus: 0, htmlBody: false });

export class FaultInjector {
  private current: FaultSettings;
  private prng: Prng;
  private pathRe: RegExp | null = null;
  /** /v1 requests counted towards `rateLimitAtRequest` since it was set. */
  private sinceRateLimitAt = 0;

  constructor(initial: FaultSettingsPatch | undefined, nowMs: number) {
    this.current = mergeFaults({ ...DEFAULT_FAULTS, emptyPages: [] }, initial ?? {}, nowMs);
    this.prng = new Prng(this.current.faultSeed);
    this.pathRe = this.current.faultPaths === null ? null : new RegExp(this.current.faultPaths);
  }

  get settings(): FaultSettings {
    return { ...this.current, emptyPages: [...this.current.emptyPages] };
  }

  update(patch: unknown, nowMs: number): FaultSettings {
    const next = mergeFaults(this.current, patch, nowMs);
    const reseed = typeof patch === 'object' && patch !== null && 'faultSeed' in patch;
    this.current = next;
    this.pathRe = next.faultPaths === null ? null : new RegExp(next.faultPaths);
    if (reseed) this.prng = new Prng(next.faultSeed);
    if (typeof patch === 'object' && patch !== null && 'rateLimitAtRequest' in patch) this.sinceRateLimitAt = 0;
    return this.settings;
  }

  appliesTo(path: string): boolean {
    return this.pathRe === null || this.pathRe.test(path);
  }

  /** Seconds until a rate-limit storm ends, or null when there is none. */
  stormRetryAfter(nowMs: number): number | null {
    const storm = this.current.rateLimitStorm;
    if (storm === null || nowMs >= storm.untilMs) return null;
    return Math.max(1, Math.ceil((storm.untilMs - nowMs) / 1000));
  }

  /** Counts a request towards `rateLimitAtRequest`: true when this one is to be answered 429 (then the setting clears). */
  takeRateLimitAt(): boolean {
    const n = this.current.rateLimitAtRequest;
    if (n === null) return false;
    this.sinceRateLimitAt++;
    if (this.sinceRateLimitAt < n) return false;
    this.current = { ...this.current, rateLimitAtRequest: null };
    this.sinceRateLimitAt = 0;
    return true;
  }

  /** Latency to add before answering (ms). */
  latency(): number {
    const { latencyMs, jitterMs } = this.current;
    return latencyMs + (jitterMs > 0 ? this.prng.next() * jitterMs : 0);
  }

  /** For a write: whether its answer is to be lost after it is applied (`loseWriteAnswers`, counted down). */
  takeLostAnswer(): FaultDecision | null {
    if (this.current.loseWriteAnswers <= 0) return null;
    this.current = { ...this.current, loseWriteAnswers: this.current.loseWriteAnswers - 1 };
    return { kind: 'drop', afterApply: true, errorStatus: 0, htmlBody: false };
  }

  decide(): FaultDecision {
    const s = this.current;
    if (s.dropRate === 0 && s.timeoutRate === 0 && s.errorRate === 0 && s.malformedRate === 0) return NO_FAULT;
    let kind: FaultKind | null = null;
    if (this.prng.next() < s.dropRate) kind = 'drop';
    else if (this.prng.next() < s.timeoutRate) kind = 'timeout';
    else if (this.prng.next() < s.errorRate) kind = 'error';
    else if (this.prng.next() < s.malformedRate) kind = 'malformed';
    if (kind === null) return NO_FAULT;
    return {
      kind,
      afterApply: this.prng.next() < 0.5,
      errorStatus: ([500, 502, 503] as const)[this.prng.int(3)] as number,
      htmlBody: this.prng.next() < 0.5,
    };
  }

  /** The wrong answer to give items/query, if any; `unknownStatus` is given once. */
  takePageFault(): PageFault | null {
    const f = this.current.pageFault;
    if (f?.kind === 'unknownStatus') this.current = { ...this.current, pageFault: null };
    return f;
  }

  isEmptyPage(pageIndex: number): boolean {
    return this.current.emptyPages.includes(pageIndex);
  }

  /** Truncates a JSON body so it no longer parses. */
  malform(body: string): string {
    if (body.length < 4) return '{"Status":0,"Data":[';
    return body.slice(0, 1 + this.prng.int(Math.max(1, Math.floor(body.length / 2))));
  }
}
