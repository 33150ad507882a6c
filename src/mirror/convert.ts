/**
 * Values between the platform's wire format and the mirror's typed columns.
 *
 * Wire values are strings: dates `YYYY-MM-DD`, date-times `YYYY-MM-DD HH:mm:ss`
 * as wall time in the platform's zone (ISO 8601 accepted too), switches
 * `1`/`0`, multi-value a JSON-encoded array, `""` for empty. `fromPlatform`
 * never throws: a value that does not convert gives `{ value: null, ok: false }`
 * (the caller keeps the item in `_raw` and counts it). `toPlatform` is its exact
 * inverse for canonical wire values, and also accepts what Postgres hands back
 * (numeric as string, timestamptz as Date, date as 'YYYY-MM-DD') and what the
 * capture trigger writes into `outbox.changes` (numeric as string, timestamptz
 * as ISO 8601 with offset, booleans, arrays, JSON).
 *
 * JS-side value per kind: text → string; numeric → plain decimal string
 * (exact, no exponent); boolean → boolean; date → 'YYYY-MM-DD'; timestamptz →
 * Date; text[] → string[]; jsonb → parsed JSON (objects/arrays) or the string.
 *
 * Numbers inside JSON values are exact (test/sync/exact-values.test.ts): a
 * multi-value array's elements keep every digit (`[1177823559771361293]` →
 * `{1177823559771361293}`), and a JSON value stored as jsonb keeps its numbers
 * as written (jsonb's numeric is exact), never through a JS number.
 *
 * NULL sent per kind (`toPlatform`): a cleared switch is `"0"` (off, as the
 * platform reads it); every other kind is `""`, the platform's empty value.
 *
 * Date-times before a zone's first standard offset (local mean time, e.g.
 * +08:05:43 in Asia/Shanghai before 1901) are read and written with that first
 * standard offset (+08:00), both ways, so they round-trip exactly.
 */
import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import { DateTime, FixedOffsetZone, IANAZone, type Zone } from 'luxon';
import { parseJson } from '../platform/json.js';
import type { ColumnKind } from './column-types.js';
import { arrayLiteral, jsonbSafe } from './pg-text.js';

export interface Converted {
  value: unknown;
  ok: boolean;
}

const NULL_OK: Converted = Object.freeze({ value: null, ok: true }) as Converted;
const FAILED: Converted = Object.freeze({ value: null, ok: false }) as Converted;

export const WIRE_DATE_FORMAT = 'yyyy-MM-dd';
export const WIRE_DATETIME_FORMAT = 'yyyy-MM-dd HH:mm:ss';

/** Wire value → column value. `zone` is the platform's IANA time zone. */
export function fromPlatform(kind: ColumnKind, raw: unknown, zone: string): Converted {
  if (raw === null || raw === undefined || raw === '') return NULL_OK;
  switch (kind) {
    case 'text':
      return textFrom(raw);
    case 'numeric': {
      const s = scalarString(raw);
      const v = s === null ? null : plainDecimal(s);
      return v === null ? FAILED : { value: v, ok: true };
    }
    case 'boolean':
      return booleanFrom(raw);
    case 'date': {
      const v = typeof raw === 'string' ? parseDate(raw, zone) : raw instanceof Date ? dateOfInstant(raw, zone) : null;
      return v === null ? FAILED : { value: v, ok: true };
    }
    case 'timestamptz': {
      const v = typeof raw === 'string' ? parseDateTime(raw, zone) : raw instanceof Date && !Number.isNaN(raw.getTime()) ? raw : null;
      return v === null ? FAILED : { value: v, ok: true };
    }
    case 'text[]':
      return multiFrom(raw);
    case 'jsonb':
      return jsonFrom(raw);
  }
}

/** Returned by `fromPlatformToSql` for a value that does not convert. */
export const NOT_CONVERTED: unique symbol = Symbol('not converted');

/**
 * Wire value → the text Postgres reads for the column type (`t`/`f`, ISO
 * dates, `YYYY-MM-DD HH:mm:ss+08:00`, array literals, JSON), null for NULL,
 * `NOT_CONVERTED` when it does not convert. Same rules as `fromPlatform`, but
 * without intermediate objects: the bulk path of `upsertItems`.
 */
export function fromPlatformToSql(kind: ColumnKind, raw: unknown, zone: string): string | null | typeof NOT_CONVERTED {
  if (raw === null || raw === undefined || raw === '') return null;
  if (typeof raw === 'string') {
    switch (kind) {
      case 'text':
        // NUL and lone surrogates stay: the writer stores the closest text PostgreSQL can hold and counts it.
        return raw;
      case 'numeric':
        return plainDecimal(raw) ?? NOT_CONVERTED;
      case 'date':
        return parseDate(raw, zone) ?? NOT_CONVERTED;
      case 'jsonb': {
        // One parse: the text is checked and re-serialised by the same pass (see `jsonDocumentText`).
        const text = jsonDocumentText(raw);
        if (text !== undefined) return jsonbSafe(text).json;
        break;
      }
      case 'timestamptz': {
        if (raw.length === 19) {
          const w = parseCanonicalWall(raw);
          if (w === null) return NOT_CONVERTED;
          if (w !== undefined) {
            // The wall time itself plus the zone's offset at that moment: no Date, no formatting.
            const offset = wallOffsetMinutes(w, zone);
            if (offset !== undefined) return offset === null ? NOT_CONVERTED : raw + offsetSuffix(offset);
          }
        }
        break;
      }
      default:
        break;
    }
  }
  const c = fromPlatform(kind, raw, zone);
  if (!c.ok) return NOT_CONVERTED;
  if (c.value === null) return null;
  switch (kind) {
    case 'boolean':
      return c.value === true ? 't' : 'f';
    case 'timestamptz':
      return (c.value as Date).toISOString();
    case 'text[]':
      return arrayLiteral(c.value as string[]);
    case 'jsonb':
      return jsonbSafe(JSON.stringify(c.value)).json;
    default:
      return c.value as string;
  }
}

/**
 * A wire value holding a JSON object or array, as the JSON text jsonb stores
 * for it; undefined when it is not one (the value is then kept as a JSON
 * string). Every number is as written (jsonb's numeric keeps it exactly):
 * `{"FileID":1177823559771361293}` stays so, where JSON.parse would round it.
 * Re-serialised, so escapes come out as JSON.stringify writes them.
 */
function jsonDocumentText(raw: string): string | undefined {
  const s = raw.trim();
  if (!s.startsWith('{') && !s.startsWith('[')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(s);
  } catch {
    return undefined;
  }
  return /\d{16}|\.\d{16}/.test(s) ? (stringifyLossless(parseLossless(s)) ?? s) : JSON.stringify(parsed);
}

const offsetSuffixes = new Map<number, string>();

/** `+08:00`, `-04:00`, `+05:45` for an offset in minutes. */
function offsetSuffix(minutes: number): string {
  let s = offsetSuffixes.get(minutes);
  if (s === undefined) {
    const abs = Math.abs(minutes);
    s = `${minutes < 0 ? '-' : '+'}${pad(Math.floor(abs / 60), 2)}:${pad(abs % 60, 2)}`;
    offsetSuffixes.set(minutes, s);
  }
  return s;
}

/**
 * The zone's offset (minutes) that applies to a wall time, as `parseDateTime`
 * resolves it; null for an unknown zone; undefined when the offset is not a
 * whole number of minutes (local mean time before ~1900: use the Date path).
 */
function wallOffsetMinutes(w: WallTime, zone: string): number | null | undefined {
  const localTs = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second, w.millisecond);
  const fixedTs = w.year < 100 ? new Date(localTs).setUTCFullYear(w.year) : localTs;
  const ts = wallToInstantCached(fixedTs, zone);
  if (ts === null) return null;
  const diff = fixedTs - ts;
  return diff % 60_000 === 0 ? diff / 60_000 : undefined;
}

/** Column value (as read from Postgres or from outbox.changes) → wire string; NULL → "" (a switch: "0", off). */
export function toPlatform(kind: ColumnKind, value: unknown, zone: string): string {
  if (value === null || value === undefined) return kind === 'boolean' ? '0' : '';
  switch (kind) {
    case 'text':
      return typeof value === 'string' ? value : ((textFrom(value).value as string | null) ?? '');
    case 'numeric': {
      const s = scalarString(value);
      const v = s === null ? null : plainDecimal(s);
      if (v === null) throw new TypeError(`not a number: ${describe(value)}`);
      return v;
    }
    case 'boolean': {
      const b = booleanFrom(value);
      if (!b.ok) throw new TypeError(`not a boolean: ${describe(value)}`);
      return b.value === true ? '1' : '0';
    }
    case 'date': {
      const v =
        typeof value === 'string'
          ? parseDate(value, zone)
          : value instanceof Date
            ? dateOfInstant(value, zone)
            : DateTime.isDateTime(value)
              ? value.setZone(zone).toFormat(WIRE_DATE_FORMAT)
              : null;
      if (v === null) throw new TypeError(`not a date: ${describe(value)}`);
      return v;
    }
    case 'timestamptz': {
      const d =
        typeof value === 'string'
          ? parseDateTime(value, zone)
          : value instanceof Date
            ? value
            : DateTime.isDateTime(value)
              ? value.toJSDate()
              : null;
      if (d === null || Number.isNaN(d.getTime())) throw new TypeError(`not a date-time: ${describe(value)}`);
      return wallTimeIn(d, zone).toFormat(WIRE_DATETIME_FORMAT);
    }
    case 'text[]': {
      const m = multiFrom(value);
      if (!m.ok) throw new TypeError(`not a multi-value array: ${describe(value)}`);
      return m.value === null ? '' : JSON.stringify(m.value);
    }
    case 'jsonb':
      return typeof value === 'string' ? value : JSON.stringify(value);
  }
}

/**
 * A number's text without exponent: `1e21` → `1000000000000000000000`,
 * `1.5E-7` → `0.00000015`, `+4` → `4`. Null for anything that is not a finite
 * decimal number (or whose exponent is absurd).
 */
export function plainDecimal(input: string): string | null {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,6}))?\s*$/.exec(input);
  if (!m) return null;
  const sign = m[1] === '-' ? '-' : '';
  const int = m[2] ?? '';
  const frac = m[3] ?? '';
  if (int === '' && frac === '') return null;
  if (m[4] === undefined) return `${sign}${int === '' ? '0' : int}${frac === '' ? '' : `.${frac}`}`;
  const exp = Number(m[4]);
  if (Math.abs(exp) > 1000) return null;
  const digits = int + frac;
  const point = int.length + exp;
  let out: string;
  if (point <= 0) out = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) out = digits + '0'.repeat(point - digits.length);
  else out = `${digits.slice(0, point)}.${digits.slice(point)}`;
  out = out.replace(/^0+(?=\d)/, '');
  return sign + out;
}

/**
 * A scalar wire value as a string: strings as they are, finite numbers and
 * bigints as plain decimals, lossless-json numbers by their digits. Null for
 * anything else (objects, NaN, Infinity).
 */
export function scalarString(raw: unknown): string | null {
  if (typeof raw === 'string') return raw;
  if (typeof raw === 'number') return Number.isFinite(raw) ? plainDecimal(String(raw)) : null;
  if (typeof raw === 'bigint') return raw.toString();
  if (isLosslessNumberLike(raw)) return raw.value;
  return null;
}

function isLosslessNumberLike(v: unknown): v is { isLosslessNumber: true; value: string } {
  return (
    typeof v === 'object' &&
    v !== null &&
    (v as { isLosslessNumber?: unknown }).isLosslessNumber === true &&
    typeof (v as { value?: unknown }).value === 'string'
  );
}

function textFrom(raw: unknown): Converted {
  const s = scalarString(raw) ?? (typeof raw === 'boolean' ? String(raw) : safeJson(raw));
  if (s === null) return FAILED;
  return s === '' ? NULL_OK : { value: s, ok: true };
}

function booleanFrom(raw: unknown): Converted {
  if (raw === true || raw === 1) return { value: true, ok: true };
  if (raw === false || raw === 0) return { value: false, ok: true };
  if (typeof raw !== 'string') return FAILED;
  switch (raw.trim().toLowerCase()) {
    case '1':
    case 'true':
    case 't':
      return { value: true, ok: true };
    case '0':
    case 'false':
    case 'f':
      return { value: false, ok: true };
    default:
      return FAILED;
  }
}

function multiFrom(raw: unknown): Converted {
  let arr: unknown = raw;
  if (typeof raw === 'string') {
    const s = raw.trim();
    if (!s.startsWith('[')) return FAILED;
    try {
      // Lossless: bare integers beyond 2^53 (19-digit IDs) keep their digits.
      arr = parseJson(s);
    } catch {
      return FAILED;
    }
  }
  if (!Array.isArray(arr)) return FAILED;
  const out: string[] = [];
  for (const el of arr) {
    const s = scalarString(el) ?? (typeof el === 'boolean' ? String(el) : null);
    if (s === null) return FAILED;
    out.push(s);
  }
  return { value: out, ok: true };
}

function jsonFrom(raw: unknown): Converted {
  if (typeof raw === 'string') {
    const s = raw.trim();
    if (s.startsWith('{') || s.startsWith('[')) {
      try {
        return { value: JSON.parse(s) as unknown, ok: true };
      } catch {
        /* not JSON after all: keep the string */
      }
    }
    return raw.includes('\0') ? FAILED : { value: raw, ok: true };
  }
  return safeJson(raw) === null ? FAILED : { value: raw, ok: true };
}

function safeJson(v: unknown): string | null {
  try {
    const s = JSON.stringify(v);
    return typeof s === 'string' ? s : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- dates

const DATE_TIME_RE =
  /^\s*(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:(?:[T ]|\s+)(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?\s*$/i;

interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
  hasTime: boolean;
  offset: Zone | null;
}

function parseWall(s: string): WallTime | null {
  const fast = parseCanonicalWall(s);
  if (fast !== undefined) return fast;
  const m = DATE_TIME_RE.exec(s);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const hour = m[4] === undefined ? 0 : Number(m[4]);
  const minute = m[5] === undefined ? 0 : Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const millisecond = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0').slice(0, 3));
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offset: Zone | null = null;
  if (m[8] !== undefined) {
    if (m[8].toUpperCase() === 'Z') offset = FixedOffsetZone.utcInstance;
    else {
      const o = /^([+-])(\d{2}):?(\d{2})?$/.exec(m[8]);
      if (!o) return null;
      const minutes = Number(o[2]) * 60 + Number(o[3] ?? '0');
      if (minutes > 18 * 60) return null;
      offset = FixedOffsetZone.instance(o[1] === '-' ? -minutes : minutes);
    }
  }
  return { year, month, day, hour, minute, second, millisecond, hasTime: m[4] !== undefined, offset };
}

/**
 * Fast path for the canonical wire forms `YYYY-MM-DD` and `YYYY-MM-DD HH:mm:ss`
 * (the bulk of every pull): no regex. Undefined means "not canonical, use the
 * general parser"; null means canonical in shape but not a real date or time.
 */
function parseCanonicalWall(s: string): WallTime | null | undefined {
  const len = s.length;
  if (len !== 10 && len !== 19) return undefined;
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return undefined; // '-'
  if (len === 19) {
    const sep = s.charCodeAt(10);
    if ((sep !== 32 && sep !== 84) || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return undefined; // ' ' or 'T', ':'
  }
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  if (year < 0 || month < 0 || day < 0) return undefined;
  let hour = 0;
  let minute = 0;
  let second = 0;
  if (len === 19) {
    hour = digits(s, 11, 2);
    minute = digits(s, 14, 2);
    second = digits(s, 17, 2);
    if (hour < 0 || minute < 0 || second < 0) return undefined;
  }
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  return { year, month, day, hour, minute, second, millisecond: 0, hasTime: len === 19, offset: null };
}

/** The number written by `count` ASCII digits at `at`, or -1. */
function digits(s: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/**
 * A calendar date as 'YYYY-MM-DD'. Accepts `YYYY-MM-DD`, a local date-time
 * (its date part), or an ISO instant with offset (its date in `zone`).
 */
function parseDate(s: string, zone: string): string | null {
  if (s.length === 10) {
    const fast = parseCanonicalWall(s);
    if (fast === null) return null;
    if (fast !== undefined) return s;
  }
  const w = parseWall(s);
  if (!w) return null;
  if (w.offset) {
    const dt = DateTime.fromObject(wallObject(w), { zone: w.offset });
    return dt.isValid ? dt.setZone(zone).toFormat(WIRE_DATE_FORMAT) : null;
  }
  return `${pad(w.year, 4)}-${pad(w.month, 2)}-${pad(w.day, 2)}`;
}

/**
 * Epoch ms of a platform date-time (`YYYY-MM-DD HH:mm:ss` in `zone`, or ISO 8601 with or without an
 * offset) without luxon's parser: what reads compare item by item (a cursor against a mark) costs
 * a regex and a memoised offset. Undefined when the text is not in those forms.
 */
export function platformInstantMillis(s: string, zone: string): number | undefined {
  const d = parseDateTime(s, zone);
  return d === null ? undefined : d.getTime();
}

/** An instant from platform wall time in `zone` (or from an explicit offset). */
function parseDateTime(s: string, zone: string): Date | null {
  const w = parseWall(s);
  if (!w) return null;
  const local = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second, w.millisecond);
  // Date.UTC maps years 0-99 to 1900-1999; the regex requires 4 digits and year >= 1, so fix those up.
  const localTs = w.year < 100 ? new Date(local).setUTCFullYear(w.year) : local;
  if (w.offset) return new Date(localTs - w.offset.offset(localTs) * 60_000);
  const ts = wallToInstantCached(localTs, zone);
  return ts === null ? null : new Date(ts);
}

/**
 * `wallToInstant` memoised per day of wall time: when both ends of a day map
 * with the same offset, every wall time inside it does too (a zone changes
 * offset at most once a day), so one Map lookup does.
 */
function wallToInstantCached(localTs: number, zone: string): number | null {
  let cache = wallOffsets.get(zone);
  if (!cache) {
    cache = new Map();
    wallOffsets.set(zone, cache);
  }
  const bucket = Math.floor(localTs / BUCKET_MS);
  const hit = cache.get(bucket);
  if (hit !== undefined) return localTs - hit;
  const ts = wallToInstant(localTs, zone);
  if (ts === null) return null;
  const start = bucket * BUCKET_MS;
  const end = start + BUCKET_MS - 1;
  const s = wallToInstant(start, zone);
  const e = wallToInstant(end, zone);
  if (s !== null && e !== null && start - s === end - e && start - s === localTs - ts) {
    if (cache.size >= MAX_CACHED_BUCKETS) cache.clear();
    cache.set(bucket, localTs - ts);
  }
  return ts;
}

const wallOffsets = new Map<string, Map<number, number>>();

/**
 * The instant of a wall time in an IANA zone: luxon's algorithm (guess, then
 * correct once; in a gap take the later wall time, in an overlap the earlier
 * offset) with zone offsets memoised per UTC day. A bucket is
 * only cached when its start and end have the same offset, so a transition
 * inside it is never smeared. About 20x faster than DateTime.fromObject.
 */
function wallToInstant(localTs: number, zone: string): number | null {
  const offset = offsetFunction(zone);
  if (!offset) return null;
  const o = offset(localTs);
  let guess = localTs - o * 60_000;
  const o2 = offset(guess);
  if (o === o2) return guess;
  guess -= (o2 - o) * 60_000;
  const o3 = offset(guess);
  if (o2 === o3) return guess;
  return localTs - Math.min(o2, o3) * 60_000;
}

// A day: a zone's offset changes at most once within one (transitions are months apart), so a day
// whose first and last millisecond share an offset has it throughout; data spread over years then
// needs a few thousand luxon look-ups instead of three per value.
const BUCKET_MS = 24 * 3_600_000;
const MAX_CACHED_BUCKETS = 50_000;
const offsetFunctions = new Map<string, ((ts: number) => number) | null>();

function offsetFunction(zone: string): ((ts: number) => number) | null {
  let fn = offsetFunctions.get(zone);
  if (fn !== undefined) return fn;
  if (!IANAZone.isValidZone(zone)) {
    fn = null;
  } else {
    const z = IANAZone.create(zone);
    const cache = new Map<number, number>();
    const lmt = localMeanTime(z);
    fn = (ts: number): number => {
      if (lmt !== null && ts < lmt.until) return lmt.offset;
      const bucket = Math.floor(ts / BUCKET_MS);
      const hit = cache.get(bucket);
      if (hit !== undefined) return hit;
      const start = z.offset(bucket * BUCKET_MS);
      const end = z.offset(bucket * BUCKET_MS + BUCKET_MS - 1);
      if (start !== end) return z.offset(ts);
      if (cache.size >= MAX_CACHED_BUCKETS) cache.clear();
      cache.set(bucket, start);
      return start;
    };
  }
  offsetFunctions.set(zone, fn);
  return fn;
}

/**
 * A zone's local mean time (the tz database's first entry, e.g. +08:05:43 in
 * Asia/Shanghai until 1901): until when it applies and the first standard
 * offset that followed it, which listsync uses instead. Null for a zone that
 * never changed offset (UTC) or whose first offset is already whole minutes.
 */
function localMeanTime(z: IANAZone): { until: number; offset: number } | null {
  const first = z.offset(EARLIEST_MS);
  if (Number.isInteger(first)) return null;
  let lo = EARLIEST_MS;
  let hi = lo;
  // Years at a time to the first instant with another offset, then to the millisecond.
  while (z.offset(hi) === first) {
    if (hi > LATEST_SCAN_MS) return null;
    hi += 365 * BUCKET_MS;
  }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (z.offset(mid) === first) lo = mid;
    else hi = mid;
  }
  return { until: hi, offset: z.offset(hi) };
}

const EARLIEST_MS = Date.UTC(1800, 0, 1);
const LATEST_SCAN_MS = Date.UTC(2000, 0, 1);

/** The wall time of an instant in `zone`, as listsync reads the zone's offsets (no local mean time). */
function wallTimeIn(d: Date, zone: string): DateTime {
  const offset = offsetFunction(zone);
  if (!offset) return DateTime.fromJSDate(d, { zone });
  return DateTime.fromMillis(d.getTime() + offset(d.getTime()) * 60_000, { zone: 'utc' });
}

function dateOfInstant(d: Date, zone: string): string | null {
  if (Number.isNaN(d.getTime())) return null;
  return wallTimeIn(d, zone).toFormat(WIRE_DATE_FORMAT);
}

function wallObject(w: WallTime): Omit<WallTime, 'hasTime' | 'offset'> {
  return { year: w.year, month: w.month, day: w.day, hour: w.hour, minute: w.minute, second: w.second, millisecond: w.millisecond };
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1]!;
}

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

function describe(v: unknown): string {
  const s = safeJson(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
