import { ApiError, STATUS, badRequest } from './api-error.js';
import { SECONDS_PER_DAY, formatNaive, parseDay } from './platform-time.js';
import { radixSortSlots } from './radix-sort.js';
import type { QueryView } from './query-lag.js';
import type { ListData, TextColumn } from './store.js';

/**
 * `items/query`: validates the request, compiles filters to a predicate and
 * sorts to a comparator, and pages through the matching items. The sorted
 * match list is cached per (list, filters, sorts) and reused while the list's
 * mutation counter is unchanged, so later pages are slices; any change to the
 * list makes the next page recompute on the current data (offset paging, like
 * the real service).
 */

export const OPERATORS = {
  Equal: 0,
  LessOrEqual: 1,
  GreaterOrEqual: 2,
  Greater: 3,
  Less: 4,
  NotEqual: 5,
  Null: 6,
  NotNull: 7,
  StartsWith: 8,
  In: 9,
  Contains: 10,
} as const;

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 1000;

interface FilterNode {
  field: string | undefined;
  type: number;
  value: string;
  pre: 'and' | 'or';
  child: FilterNode[];
}

interface SortNode {
  field: string;
  desc: boolean;
}

export interface Paging {
  pageIndex: number;
  pageSize: number;
}

export interface ParsedQuery extends Paging {
  fields: string[] | undefined;
  filters: FilterNode[];
  sorts: SortNode[];
  cacheKey: string;
}

type Pred = (slot: number) => boolean;
type Cmp = (a: number, b: number) => number;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** PageIndex (1-based, 0 means 1) and PageSize (default 20, 1..1000). */
export function parsePaging(body: Record<string, unknown>): Paging {
  const rawSize = body['PageSize'];
  let pageSize = DEFAULT_PAGE_SIZE;
  if (rawSize !== undefined && rawSize !== null) {
    if (typeof rawSize !== 'number' || !Number.isInteger(rawSize) || rawSize < 1 || rawSize > MAX_PAGE_SIZE) {
      throw badRequest(`PageSize must be an integer from 1 to ${MAX_PAGE_SIZE} (got ${JSON.stringify(rawSize)})`);
    }
    pageSize = rawSize;
  }
  const rawIndex = body['PageIndex'];
  let pageIndex = 1;
  if (rawIndex !== undefined && rawIndex !== null) {
    if (typeof rawIndex !== 'number' || !Number.isInteger(rawIndex) || rawIndex < 0) {
      throw badRequest(`PageIndex must be an integer >= 1 (got ${JSON.stringify(rawIndex)})`);
    }
    pageIndex = Math.max(1, rawIndex);
  }
  return { pageIndex, pageSize };
}

function requireIndexed(list: ListData, field: string, use: 'filter' | 'sort'): void {
  const meta = list.field(field);
  if (!meta) {
    throw new ApiError(
      STATUS.notIndexed,
      `Field "${field}" does not exist in list ${list.appID}/${list.listID}, so it cannot be used to ${use}`,
    );
  }
  if (!meta.IsIndex) {
    throw new ApiError(
      STATUS.notIndexed,
      `Field "${field}" is not indexed: only indexed fields can be used to ${use} (list ${list.appID}/${list.listID})`,
    );
  }
}

function parseFilter(list: ListData, raw: unknown, path: string): FilterNode {
  if (!isRecord(raw)) throw badRequest(`${path} must be an object`);
  const childRaw = raw['Child'];
  let child: FilterNode[] = [];
  if (childRaw !== undefined && childRaw !== null) {
    if (!Array.isArray(childRaw)) throw badRequest(`${path}.Child must be an array of filters`);
    child = childRaw.map((c, i) => parseFilter(list, c, `${path}.Child[${i}]`));
  }
  const preRaw = raw['Pre'];
  let pre: 'and' | 'or' = 'and';
  if (preRaw !== undefined && preRaw !== null && preRaw !== '') {
    const p = typeof preRaw === 'string' ? preRaw.toLowerCase() : '';
    if (p !== 'and' && p !== 'or') throw badRequest(`${path}.Pre must be "and" or "or" (got ${JSON.stringify(preRaw)})`);
    pre = p;
  }
  const fieldRaw = raw['Field'];
  if (fieldRaw === undefined || fieldRaw === null || fieldRaw === '') {
    if (child.length === 0) throw badRequest(`${path}.Field is required`);
    return { field: undefined, type: -1, value: '', pre, child };
  }
  if (typeof fieldRaw !== 'string') throw badRequest(`${path}.Field must be a string`);
  requireIndexed(list, fieldRaw, 'filter');
  const type = raw['Type'];
  if (typeof type !== 'number' || !Number.isInteger(type) || type < 0 || type > 10) {
    throw badRequest(`${path}.Type must be an operator code from 0 to 10 (got ${JSON.stringify(type)})`);
  }
  const v = raw['Value'];
  let value: string;
  if (v === undefined || v === null) value = '';
  else if (typeof v === 'string') value = v;
  else if (typeof v === 'number' || typeof v === 'boolean') value = String(v);
  else throw badRequest(`${path}.Value must be a string (got ${JSON.stringify(v)})`);
  return { field: fieldRaw, type, value, pre, child };
}

/** Validates an items/query body against the list. Throws ApiError (40000, 40001). */
export function parseQuery(body: unknown, list: ListData): ParsedQuery {
  if (body === undefined || body === null) body = {};
  if (!isRecord(body)) throw badRequest('The request body must be a JSON object');
  const paging = parsePaging(body);
  let fields: string[] | undefined;
  const fieldsRaw = body['Fields'];
  if (fieldsRaw !== undefined && fieldsRaw !== null) {
    if (!Array.isArray(fieldsRaw) || !fieldsRaw.every((f) => typeof f === 'string'))
      throw badRequest('Fields must be an array of field names');
    fields = fieldsRaw.length === 0 ? undefined : (fieldsRaw as string[]);
  }
  let filters: FilterNode[] = [];
  const filtersRaw = body['Filters'];
  if (filtersRaw !== undefined && filtersRaw !== null) {
    if (!Array.isArray(filtersRaw)) throw badRequest('Filters must be an array of filter objects');
    filters = filtersRaw.map((f, i) => parseFilter(list, f, `Filters[${i}]`));
  }
  let sorts: SortNode[] = [];
  const sortsRaw = body['Sorts'];
  if (sortsRaw !== undefined && sortsRaw !== null) {
    if (!Array.isArray(sortsRaw)) throw badRequest('Sorts must be an array of sort objects');
    sorts = sortsRaw.map((s, i) => {
      if (!isRecord(s) || typeof s['Field'] !== 'string') throw badRequest(`Sorts[${i}].Field must be a field name`);
      const desc = s['Desc'];
      if (desc !== undefined && desc !== null && typeof desc !== 'boolean') throw badRequest(`Sorts[${i}].Desc must be true or false`);
      requireIndexed(list, s['Field'], 'sort');
      return { field: s['Field'], desc: desc === true };
    });
  }
  // Compile once to validate values (bad dates, numbers, In arrays → 40000).
  compileFilters(list, filters);
  const cacheKey = JSON.stringify([filters, sorts]);
  return { ...paging, fields, filters, sorts, cacheKey };
}

// ---------------------------------------------------------------------------
// Filters

function never(): boolean {
  return false;
}
function always(): boolean {
  return true;
}

function parseInList(node: FilterNode): string[] {
  let arr: unknown;
  try {
    arr = JSON.parse(node.value);
  } catch {
    arr = undefined;
  }
  if (!Array.isArray(arr)) {
    throw badRequest(
      `Filter on "${node.field}": operator 9 (In) needs Value to be a JSON-encoded array string such as "[\\"a\\",\\"b\\"]" (got ${JSON.stringify(node.value)})`,
    );
  }
  return arr.map((x) => (typeof x === 'string' ? x : typeof x === 'number' || typeof x === 'boolean' ? String(x) : JSON.stringify(x)));
}

function dayValue(node: FilterNode, s: string): number {
  const d = parseDay(s);
  if (d === undefined) throw badRequest(`Filter on date field "${node.field}": Value must be a date YYYY-MM-DD (got ${JSON.stringify(s)})`);
  return d;
}

function numberValue(node: FilterNode, s: string): number {
  const n = s.trim() === '' ? NaN : Number(s);
  if (!Number.isFinite(n)) throw badRequest(`Filter on number field "${node.field}": Value must be a number (got ${JSON.stringify(s)})`);
  return n;
}

/** Calendar-day comparisons over a key that is a day number (unit 1) or naive seconds (unit 86400). */
function dayPredicate(node: FilterNode, key: Float64Array, unit: number, asText: (slot: number) => string): Pred {
  const t = node.type;
  if (t === OPERATORS.StartsWith) return (s) => asText(s).startsWith(node.value);
  if (t === OPERATORS.Contains) return (s) => asText(s).includes(node.value);
  if (t === OPERATORS.In) {
    const days = new Set(parseInList(node).map((x) => dayValue(node, x)));
    return (s) => {
      const v = key[s] as number;
      return v === v && days.has(Math.floor(v / unit));
    };
  }
  const d = dayValue(node, node.value);
  const lo = d * unit;
  const hi = (d + 1) * unit;
  switch (t) {
    case OPERATORS.Equal:
      return (s) => (key[s] as number) >= lo && (key[s] as number) < hi;
    case OPERATORS.LessOrEqual:
      return (s) => (key[s] as number) < hi;
    case OPERATORS.GreaterOrEqual:
      return (s) => (key[s] as number) >= lo;
    case OPERATORS.Greater:
      return (s) => (key[s] as number) >= hi;
    case OPERATORS.Less:
      return (s) => (key[s] as number) < lo;
    case OPERATORS.NotEqual:
      return (s) => {
        const v = key[s] as number;
        return v === v && (v < lo || v >= hi);
      };
    default:
      throw new Error(`unexpected operator ${t}`);
  }
}

function numberPredicate(node: FilterNode, key: Float64Array, values: readonly string[]): Pred {
  const t = node.type;
  if (t === OPERATORS.StartsWith) return (s) => (values[s] as string).startsWith(node.value);
  if (t === OPERATORS.Contains) return (s) => (values[s] as string).includes(node.value);
  if (t === OPERATORS.In) {
    const set = new Set(parseInList(node).map((x) => numberValue(node, x)));
    return (s) => set.has(key[s] as number);
  }
  const x = numberValue(node, node.value);
  switch (t) {
    case OPERATORS.Equal:
      return (s) => key[s] === x;
    case OPERATORS.LessOrEqual:
      return (s) => (key[s] as number) <= x;
    case OPERATORS.GreaterOrEqual:
      return (s) => (key[s] as number) >= x;
    case OPERATORS.Greater:
      return (s) => (key[s] as number) > x;
    case OPERATORS.Less:
      return (s) => (key[s] as number) < x;
    case OPERATORS.NotEqual:
      return (s) => {
        const v = key[s] as number;
        return v === v && v !== x;
      };
    default:
      throw new Error(`unexpected operator ${t}`);
  }
}

function textPredicate(node: FilterNode, values: readonly string[]): Pred {
  const x = node.value;
  switch (node.type) {
    case OPERATORS.Equal:
      return (s) => values[s] === x;
    case OPERATORS.LessOrEqual:
      return (s) => values[s] !== '' && (values[s] as string) <= x;
    case OPERATORS.GreaterOrEqual:
      return (s) => values[s] !== '' && (values[s] as string) >= x;
    case OPERATORS.Greater:
      return (s) => values[s] !== '' && (values[s] as string) > x;
    case OPERATORS.Less:
      return (s) => values[s] !== '' && (values[s] as string) < x;
    case OPERATORS.NotEqual:
      return (s) => values[s] !== '' && values[s] !== x;
    case OPERATORS.StartsWith:
      return (s) => values[s] !== '' && (values[s] as string).startsWith(x);
    case OPERATORS.Contains:
      return (s) => values[s] !== '' && (values[s] as string).includes(x);
    case OPERATORS.In: {
      const set = new Set(parseInList(node));
      return (s) => set.has(values[s] as string);
    }
    default:
      throw new Error(`unexpected operator ${node.type}`);
  }
}

function idPredicate(node: FilterNode, list: ListData): Pred {
  const ids = list.ids;
  const t = node.type;
  if (t === OPERATORS.StartsWith) return (s) => (ids[s] as bigint).toString().startsWith(node.value);
  if (t === OPERATORS.Contains) return (s) => (ids[s] as bigint).toString().includes(node.value);
  const parse = (v: string): bigint => {
    if (!/^\d{1,20}$/.test(v)) throw badRequest(`Filter on "ListDataID": Value must be an item ID of digits (got ${JSON.stringify(v)})`);
    return BigInt(v);
  };
  if (t === OPERATORS.In) {
    const set = new Set(parseInList(node).map(parse));
    return (s) => set.has(ids[s] as bigint);
  }
  const x = parse(node.value);
  switch (t) {
    case OPERATORS.Equal:
      return (s) => ids[s] === x;
    case OPERATORS.LessOrEqual:
      return (s) => (ids[s] as bigint) <= x;
    case OPERATORS.GreaterOrEqual:
      return (s) => (ids[s] as bigint) >= x;
    case OPERATORS.Greater:
      return (s) => (ids[s] as bigint) > x;
    case OPERATORS.Less:
      return (s) => (ids[s] as bigint) < x;
    case OPERATORS.NotEqual:
      return (s) => ids[s] !== x;
    default:
      throw new Error(`unexpected operator ${t}`);
  }
}

function leafPredicate(list: ListData, node: FilterNode): Pred {
  const name = node.field as string;
  const meta = list.field(name);
  if (!meta) throw new Error(`unknown field ${name}`);
  let type = node.type;
  // Equal "" is Null, NotEqual "" is NotNull, whatever the field type.
  if (type === OPERATORS.Equal && node.value === '') type = OPERATORS.Null;
  if (type === OPERATORS.NotEqual && node.value === '') type = OPERATORS.NotNull;

  if (name === 'ListDataID' || name === 'Created' || name === 'Modified') {
    if (type === OPERATORS.Null) return never;
    if (type === OPERATORS.NotNull) return always;
    if (name === 'ListDataID') return idPredicate(node, list);
    const key = name === 'Created' ? list.created : list.modified;
    return dayPredicate(node, key, SECONDS_PER_DAY, (s) => formatNaive(key[s] as number));
  }
  const col = list.column(name) as TextColumn;
  const values = col.values;
  if (type === OPERATORS.Null) return (s) => values[s] === '';
  if (type === OPERATORS.NotNull) return (s) => values[s] !== '';
  const key = col.key;
  if (key && (col.kind === 'date' || col.kind === 'datetime')) {
    return dayPredicate(node, key, col.kind === 'date' ? 1 : SECONDS_PER_DAY, (s) => values[s] as string);
  }
  if (key && col.kind === 'number') return numberPredicate(node, key, values);
  return textPredicate(node, values);
}

function allOf(preds: Pred[]): Pred {
  if (preds.length === 1) return preds[0] as Pred;
  if (preds.length === 2) {
    const [a, b] = preds as [Pred, Pred];
    return (s) => a(s) && b(s);
  }
  return (s) => {
    for (const p of preds) if (!p(s)) return false;
    return true;
  };
}

function anyOf(preds: Pred[]): Pred {
  if (preds.length === 1) return preds[0] as Pred;
  return (s) => {
    for (const p of preds) if (p(s)) return true;
    return false;
  };
}

/**
 * A group of filters joined by their `Pre` ("and" binds tighter than "or", as
 * in the SQL the platform builds). A filter with `Child` is a parenthesised
 * group: its own condition (if it has a Field) followed by the children.
 */
function groupPredicate(list: ListData, nodes: FilterNode[]): Pred {
  const terms: Pred[][] = [[]];
  nodes.forEach((node, i) => {
    const p = nodePredicate(list, node);
    if (i > 0 && node.pre === 'or') terms.push([p]);
    else (terms[terms.length - 1] as Pred[]).push(p);
  });
  return anyOf(terms.map(allOf));
}

function nodePredicate(list: ListData, node: FilterNode): Pred {
  if (node.child.length === 0) return leafPredicate(list, node);
  const members = node.field === undefined ? node.child : [{ ...node, child: [], pre: 'and' as const }, ...node.child];
  return groupPredicate(list, members);
}

function compileFilters(list: ListData, filters: FilterNode[]): Pred | null {
  return filters.length === 0 ? null : groupPredicate(list, filters);
}

// ---------------------------------------------------------------------------
// Sorts

/** Numeric keys compare as numbers; empty or unparseable values (NaN) sort first. */
function numCmp(key: Float64Array): Cmp {
  return (a, b) => {
    const x = key[a] as number;
    const y = key[b] as number;
    if (x === y) return 0;
    if (x !== x) return y !== y ? 0 : -1;
    if (y !== y) return 1;
    return x < y ? -1 : 1;
  };
}

function textCmp(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

/** The numeric key array a sort field compares by, or null for text. */
function numericKey(list: ListData, name: string): Float64Array | null {
  if (name === 'Created') return list.created;
  if (name === 'Modified') return list.modified;
  return list.column(name)?.key ?? null;
}

function sortComparator(list: ListData, sort: SortNode): Cmp {
  let cmp: Cmp;
  const name = sort.field;
  const key = numericKey(list, name);
  if (name === 'ListDataID') {
    const ids = list.ids;
    cmp = (a, b) => ((ids[a] as bigint) < (ids[b] as bigint) ? -1 : (ids[a] as bigint) > (ids[b] as bigint) ? 1 : 0);
  } else if (key) {
    cmp = numCmp(key);
  } else {
    const values = (list.column(name) as TextColumn).values;
    cmp = (a, b) => textCmp(values[a] as string, values[b] as string);
  }
  return sort.desc ? (a, b) => cmp(b, a) : cmp;
}

function compileSorts(list: ListData, sorts: SortNode[]): Cmp {
  const cmps = sorts.map((s) => sortComparator(list, s));
  if (cmps.length === 1) return cmps[0] as Cmp;
  return (a, b) => {
    for (const c of cmps) {
      const r = c(a, b);
      if (r !== 0) return r;
    }
    return 0;
  };
}

/**
 * Radix keys for a single sort on an integer-valued numeric key (timestamps,
 * day numbers, whole numbers), or null when the values do not fit.
 */
function radixKeys(slots: Int32Array, key: Float64Array, desc: boolean): Uint32Array | null {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < slots.length; i++) {
    const v = key[slots[i] as number] as number;
    if (v !== v) continue;
    if (!Number.isInteger(v)) return null;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === Infinity) return null;
  const range = max - min;
  if (range + 2 > 0xffffffff) return null;
  const keys = new Uint32Array(slots.length);
  for (let i = 0; i < slots.length; i++) {
    const v = key[slots[i] as number] as number;
    keys[i] = v !== v ? (desc ? range + 1 : 0) : desc ? max - v : v - min + 1;
  }
  return keys;
}

/** Sorts slots (given in ListDataID order) stably, so ties stay in ListDataID order. */
function sortSlots(list: ListData, slots: Int32Array, sorts: SortNode[]): Int32Array {
  if (slots.length < 2) return slots;
  const cmp = compileSorts(list, sorts);
  // Already in order (e.g. Created ascending: IDs grow with Created)? Strictly reversed?
  let ascending = true;
  let strictlyDescending = true;
  for (let i = 1; i < slots.length && (ascending || strictlyDescending); i++) {
    const r = cmp(slots[i - 1] as number, slots[i] as number);
    if (r > 0) ascending = false;
    if (r <= 0) strictlyDescending = false;
  }
  if (ascending) return slots;
  if (strictlyDescending) return slots.slice().reverse();
  const only = sorts.length === 1 ? (sorts[0] as SortNode) : null;
  const key = only ? numericKey(list, only.field) : null;
  if (only && key) {
    const keys = radixKeys(slots, key, only.desc);
    if (keys) return radixSortSlots(slots, keys);
  }
  // TypedArray sort is stable (ES2019+).
  return slots.slice().sort(cmp);
}

// ---------------------------------------------------------------------------
// Execution with a cache

interface CacheEntry {
  list: ListData;
  epoch: string;
  slots: Int32Array;
}

export interface QueryResult {
  totalCount: number;
  /** Slots of the requested page, in order. */
  slots: Int32Array;
  /** Whether the match list came from the cache. */
  cached: boolean;
}

export class QueryEngine {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly maxEntries: number;

  constructor(maxEntries = 12) {
    this.maxEntries = maxEntries;
  }

  clear(): void {
    this.cache.clear();
  }

  /**
   * All matching slots, sorted (ties by ListDataID ascending). `view` is what
   * the query sees (default: the live items; a lagging index shows others).
   */
  matches(
    list: ListData,
    q: Pick<ParsedQuery, 'filters' | 'sorts' | 'cacheKey'>,
    view: QueryView = liveView(list),
  ): { slots: Int32Array; cached: boolean } {
    const key = `${list.key}\u0001${q.cacheKey}`;
    const hit = this.cache.get(key);
    if (hit && hit.list === list && hit.epoch === view.epoch) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return { slots: hit.slots, cached: true };
    }
    const pred = compileFilters(list, q.filters);
    const order = view.order;
    let slots: Int32Array;
    if (pred === null) {
      slots = new Int32Array(order);
    } else {
      const buf = new Int32Array(order.length);
      let c = 0;
      for (let i = 0; i < order.length; i++) {
        const s = order[i] as number;
        if (pred(s)) buf[c++] = s;
      }
      slots = c === buf.length ? buf : buf.slice(0, c);
    }
    if (q.sorts.length > 0) slots = sortSlots(list, slots, q.sorts);
    this.cache.delete(key);
    this.cache.set(key, { list, epoch: view.epoch, slots });
    while (this.cache.size > this.maxEntries) {
      const oldest = this.cache.keys().next().value as string;
      this.cache.delete(oldest);
    }
    return { slots, cached: false };
  }

  run(list: ListData, q: ParsedQuery, view?: QueryView): QueryResult {
    const { slots, cached } = this.matches(list, q, view);
    const start = Math.min(slots.length, (q.pageIndex - 1) * q.pageSize);
    return { totalCount: slots.length, slots: slots.subarray(start, start + q.pageSize), cached };
  }
}

function liveView(list: ListData): QueryView {
  return { order: list.order, epoch: `${list.mutation}` };
}
