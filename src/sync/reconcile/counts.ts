/**
 * Reconcile by counts: where the mirror and the platform disagree about how
 * many items were created in a range of platform calendar days.
 *
 * The platform answers `TotalCount` for a `Created` range with `PageSize` 1;
 * the mirror's live rows per platform day come from one grouped query. The
 * search starts with the whole list and splits only the ranges whose counts
 * differ, in halves by days, down to ranges that one page sweeps (one day, or
 * at most a page of items). Of two halves only the left is asked for: the
 * right one is the parent's count less the left's. So k deletes cost about
 * k·log2(days) count requests plus a page or two of IDs per range swept,
 * and a mirror that agrees costs one request.
 *
 * What counts cannot see: a delete and an item the mirror never got (a
 * hidden create) in the same range cancel out; a version behind changes no
 * count. The full sweep (`reconcile --full`, on a schedule of its own) covers
 * those. Counts decide only where to look: what is marked is decided by the
 * sweep of the range and the ID lookups after it, as in the full sweep.
 *
 * The decisions are pure (`countSpan`, `nextStep`, `DayCounts`, tested without
 * a database in sync/reconcile-decisions.test.ts); `searchByCounts` only asks
 * the counts they call for (sync/reconcile-counts.test.ts: requests a search
 * costs against the emulator).
 */
import { DateTime } from 'luxon';
import { Operator, type Filter } from '../../platform/types.js';

/** Platform calendar days `[from, to)`, `YYYY-MM-DD`; null is open (before everything, after everything). */
export interface DayRange {
  from: string | null;
  to: string | null;
}

export interface RangeCount {
  range: DayRange;
  /** The platform's count (asked for, or the parent's less its sibling's). */
  platform: number;
  mirror: number;
}

/** Live mirror rows per platform calendar day, ascending. */
export class DayCounts {
  /** Live rows with a created day, plus those without one (they count in the whole list only). */
  readonly total: number;

  constructor(
    private readonly days: readonly { day: string; n: number }[],
    readonly undated: number,
  ) {
    this.total = days.reduce((s, d) => s + d.n, undated);
  }

  get first(): string | undefined {
    return this.days[0]?.day;
  }

  get last(): string | undefined {
    return this.days[this.days.length - 1]?.day;
  }

  /** Rows in the range; the whole list (both ends open) includes the undated ones. */
  count(range: DayRange): number {
    if (range.from === null && range.to === null) return this.total;
    let n = 0;
    for (const d of this.days) {
      if (range.from !== null && d.day < range.from) continue;
      if (range.to !== null && d.day >= range.to) break;
      n += d.n;
    }
    return n;
  }
}

export const WHOLE_LIST: DayRange = { from: null, to: null };

/** The filters that select a range's items on `createdField` (Created >= from, Created < to; day granularity). */
export function rangeFilters(range: DayRange, createdField: string): Filter[] {
  const filters: Filter[] = [];
  if (range.from !== null) filters.push({ Field: createdField, Type: Operator.GreaterOrEqual, Value: range.from });
  if (range.to !== null) filters.push({ Field: createdField, Type: Operator.Less, Value: range.to });
  return filters;
}

/** `from`..`to` as people read it: one day, or the first and last day. */
export function describeRange(range: DayRange): string {
  if (range.from === null && range.to === null) return 'the whole list';
  if (range.from === null) return `before ${range.to}`;
  if (range.to === null) return `from ${range.from}`;
  const last = addDays(range.to, -1);
  return last === range.from ? range.from : `${range.from}..${last}`;
}

function addDays(day: string, n: number): string {
  return DateTime.fromISO(day, { zone: 'utc' }).plus({ days: n }).toISODate()!;
}

function daysBetween(from: string, to: string): number {
  return Math.round(DateTime.fromISO(to, { zone: 'utc' }).diff(DateTime.fromISO(from, { zone: 'utc' }), 'days').days);
}

export interface CountSearch {
  /** The platform's count of the whole list (the first request). */
  platformTotal: number;
  mirrorTotal: number;
  /** Ranges to sweep by IDs: their counts differ and they are one day or one page. */
  toSweep: RangeCount[];
  /** Count requests sent. */
  requests: number;
}

/**
 * Finds the ranges whose counts differ. `span` is the first day with mirror
 * rows (or today) and the last day that may hold items (today, platform
 * time): the open ends of the outermost ranges still reach beyond it.
 * Ranges of one level are asked for together.
 */
export async function searchByCounts(opts: {
  mirror: DayCounts;
  today: string;
  pageSize: number;
  count: (range: DayRange) => Promise<number>;
  signal?: AbortSignal | undefined;
}): Promise<CountSearch> {
  const { mirror, pageSize } = opts;
  const span = countSpan(mirror, opts.today);
  let requests = 1;
  const platformTotal = await opts.count(WHOLE_LIST);
  const toSweep: RangeCount[] = [];
  let level: RangeCount[] = [{ range: WHOLE_LIST, platform: platformTotal, mirror: mirror.total }];
  while (level.length > 0) {
    if (opts.signal?.aborted) throw opts.signal.reason ?? new Error('aborted');
    const next: RangeCount[] = [];
    await Promise.all(
      level.map(async (node) => {
        const step = nextStep(node, span, pageSize);
        if (step.kind === 'agree') return;
        if (step.kind === 'sweep') {
          toSweep.push(node);
          return;
        }
        requests++;
        const leftCount = await opts.count(step.left);
        next.push({ range: step.left, platform: leftCount, mirror: mirror.count(step.left) });
        next.push({ range: step.right, platform: node.platform - leftCount, mirror: mirror.count(step.right) });
      }),
    );
    level = next;
  }
  toSweep.sort((a, b) => (a.range.from ?? '').localeCompare(b.range.from ?? ''));
  return { platformTotal, mirrorTotal: mirror.total, toSweep, requests };
}

/**
 * The days the search splits: from the first day with mirror rows (or today) to the day after
 * the last day that may hold items (today, platform time, or a later mirror day). The open
 * ends of the outermost ranges still reach beyond it.
 */
export function countSpan(mirror: Pick<DayCounts, 'first' | 'last'>, today: string): { from: string; to: string } {
  const from = mirror.first !== undefined && mirror.first < today ? mirror.first : today;
  const to = addDays(mirror.last !== undefined && mirror.last > today ? mirror.last : today, 1);
  return { from, to };
}

/** What a range's two counts call for. */
export type RangeStep = { kind: 'agree' } | { kind: 'sweep' } | { kind: 'split'; left: DayRange; right: DayRange };

/**
 * Counts that agree: nothing to look at. Counts that differ over one day of the span, or over
 * at most a page of the platform's items: sweep the range by IDs. Otherwise split it in halves
 * by days (the platform's count of the right half is the parent's less the left's).
 */
export function nextStep(node: RangeCount, span: { from: string; to: string }, pageSize: number): RangeStep {
  if (node.platform === node.mirror) return { kind: 'agree' };
  const from = node.range.from ?? span.from;
  const to = node.range.to ?? span.to;
  const days = daysBetween(from, to);
  if (days <= 1 || node.platform <= pageSize) return { kind: 'sweep' };
  const mid = addDays(from, Math.floor(days / 2));
  return { kind: 'split', left: { from: node.range.from, to: mid }, right: { from: mid, to: node.range.to } };
}
