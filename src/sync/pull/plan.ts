/**
 * The pull's plan: which items a run reads and in what order. Pure: no I/O.
 *
 * - `newest-first`: the indexed date filter (cursor >= the platform date of
 *   high-water − overlap), sorted by the cursor field then the ID, both
 *   descending; the read stops at the first page that reaches items modified
 *   before high-water − overlap.
 * - `by-created`: the date window (cursor >= watermark − lookbackDays, or no
 *   filter for a full read, or a backfill's range) sorted by the immutable
 *   sort field then the ID, ascending, read to the end.
 */
import { DateTime } from 'luxon';
import type { ListConfig } from '../../config.js';
import { parsePlatformDateTime, tryParsePlatformDateTime } from '../../platform/dates.js';
import { platformInstantMillis } from '../../mirror/convert.js';
import { Operator, type FieldMeta, type Filter, type ItemQuery } from '../../platform/types.js';

export type ReadOrder = 'newest-first' | 'by-created';

export interface PullPlan {
  order: ReadOrder;
  windowFrom: string | null;
  windowTo: string | null;
  /** newest-first: items modified before this (platform-local `YYYY-MM-DD HH:mm:ss`) were vouched for by the last run. */
  stopBefore: string | null;
  /** Why a pull that could read newest-first does not (logged and recorded in sync_runs.details). */
  fallback: string | null;
}

export interface PlanInput {
  mode: { kind: 'incremental' } | { kind: 'backfill'; from: string; to?: string };
  watermark: string | null;
  highWater: string | null;
  lookbackDays: number;
  overlapMinutes: number;
  zone: string;
  /** A new field needs every row re-read. */
  refill: boolean;
  /** Null when the cursor field can be sorted on, else why not. */
  cursorUnsortable: string | null;
}

export function planWindow(p: PlanInput): PullPlan {
  if (p.mode.kind === 'backfill') return byCreated(p.mode.from, p.mode.to ?? null, null);
  if (p.watermark === null || p.refill) return byCreated(null, null, null);
  const dateWindow = DateTime.fromISO(p.watermark, { zone: p.zone }).minus({ days: p.lookbackDays }).toISODate();
  if (p.highWater === null)
    return byCreated(dateWindow, null, 'no high-water modification time recorded yet (first pull after an upgrade)');
  if (p.cursorUnsortable !== null) return byCreated(dateWindow, null, p.cursorUnsortable);
  const stop = tryParsePlatformDateTime(p.highWater, p.zone);
  if (!stop) return byCreated(dateWindow, null, `the recorded high-water mark ${JSON.stringify(p.highWater)} does not parse`);
  const from = stop.minus({ minutes: p.overlapMinutes });
  return {
    order: 'newest-first',
    windowFrom: from.toFormat('yyyy-MM-dd'),
    windowTo: null,
    stopBefore: from.toFormat('yyyy-MM-dd HH:mm:ss'),
    fallback: null,
  };
}

/** The plan of a first full load: it does not depend on the fields, so its first requests need not wait for them. */
export const FULL_READ: PullPlan = { order: 'by-created', windowFrom: null, windowTo: null, stopBefore: null, fallback: null };

/** Why the cursor field cannot be read newest first, from the field metadata; null when it can. */
export function cursorUnsortable(fields: readonly FieldMeta[], cursorField: string): string | null {
  const meta = fields.find((f) => f.FieldName === cursorField);
  if (meta && meta.IsSort === false && meta.IsIndex === false)
    return `the cursor field ${cursorField} is neither sortable nor indexed on the platform`;
  return null;
}

/** The follow-up read after a run's pages: newest first down to the run's start mark (`YYYY-MM-DD HH:mm:ss`). */
export function followUpPlan(since: string): PullPlan {
  return { order: 'newest-first', windowFrom: since.slice(0, 10), windowTo: null, stopBefore: since, fallback: null };
}

/** The plan a newest-first read falls back to within the same run. */
export function fallbackPlan(p: PlanInput, why: string): PullPlan {
  const plan = planWindow({ ...p, highWater: null });
  return { ...plan, fallback: why };
}

function byCreated(windowFrom: string | null, windowTo: string | null, fallback: string | null): PullPlan {
  return { order: 'by-created', windowFrom, windowTo, stopBefore: null, fallback };
}

export function buildQuery(list: ListConfig, plan: PullPlan): ItemQuery {
  const filters: Filter[] = [];
  if (plan.windowFrom) filters.push({ Field: list.cursorField, Type: Operator.GreaterOrEqual, Value: plan.windowFrom });
  if (plan.windowTo) filters.push({ Field: list.cursorField, Type: Operator.LessOrEqual, Value: plan.windowTo });
  const desc = plan.order === 'newest-first';
  const first = desc ? list.cursorField : list.sortField;
  return {
    Filters: filters,
    Sorts: [
      { Field: first, Desc: desc },
      { Field: list.idField, Desc: desc },
    ],
    PageSize: list.pageSize,
  };
}

/** A cursor value as epoch milliseconds, or undefined when it does not parse (compared item by item: the fast parser first). */
export function cursorMillis(value: unknown, zone: string): number | undefined {
  if (typeof value !== 'string') return undefined;
  return platformInstantMillis(value, zone) ?? tryParsePlatformDateTime(value, zone)?.toMillis();
}

/** `YYYY-MM-DD HH:mm:ss` of a cursor value (normalised from ISO too). */
export function cursorText(value: string, zone: string): string {
  return parsePlatformDateTime(value, zone).toFormat('yyyy-MM-dd HH:mm:ss');
}

/** `YYYY-MM-DD HH:mm:ss`, `seconds` before a cursor value. */
export function cursorTextBefore(value: string, seconds: number, zone: string): string {
  return parsePlatformDateTime(value, zone).minus({ seconds }).toFormat('yyyy-MM-dd HH:mm:ss');
}
