/**
 * Pure: what an HTTP answer of the platform says, and what its Data holds.
 *
 * An answer is a success only with HTTP 2xx and the envelope's Status 0. A
 * body that is not JSON or not the `{Status, Data, Message}` envelope is
 * `malformed` under a 2xx (retried: the answer broke on the way) and an
 * `answer` with no message otherwise; any other envelope is an `answer`
 * failure for the retry rule (retry-decision.ts) to classify.
 *
 * The Data readers accept the shapes the platform was seen to send (an ID as
 * Data itself or under Id / ID / ListDataID, discovery records as an array or
 * inside Items / List / Data, directory rows inside any array-valued key) and
 * fail with a PlatformError naming the request when Data holds something else.
 *
 * Tested table by table in test/platform/answer-decoding.test.ts.
 */
import { PlatformError } from './platform-errors.js';
import { itemId } from './item-identity.js';
import { parseJson } from './json.js';
import type { PlatformApplication, PlatformListRef } from './types.js';

export interface Envelope {
  Status: number;
  Data: unknown;
  Message: string;
  TotalCount?: number;
  [key: string]: unknown;
}

/** An attempt answered with success: the envelope, and what the pager and hook subscriptions read beside it. */
export interface AnsweredAttempt {
  ok: true;
  envelope: Envelope;
  httpStatus: number;
  durationMs: number;
  location?: string;
  bytes: number;
}

/** An attempt that brought no success: no answer (`transport`), a broken 2xx body (`malformed`), or a refusal (`answer`). */
export interface FailedAttempt {
  ok: false;
  kind: 'transport' | 'malformed' | 'answer';
  httpStatus?: number;
  status?: number;
  message?: string;
  code?: string;
  retryAfterMs?: number;
  cause?: unknown;
  durationMs: number;
}

export type Attempt = AnsweredAttempt | FailedAttempt;

/** What arrived for one attempt: the HTTP status, the body as text, and the headers listsync reads. */
export interface RawAnswer {
  statusCode: number;
  text: string;
  retryAfterMs: number | undefined;
  location: string | undefined;
  durationMs: number;
}

/** The attempt an answer amounts to. */
export function decodeAnswer(raw: RawAnswer): Attempt {
  const { statusCode, text, retryAfterMs, location, durationMs } = raw;
  const is2xx = statusCode >= 200 && statusCode < 300;
  // A body that cannot be read: malformed when the status said success, else an answer with no message.
  const unreadable = (message: string, cause?: unknown): FailedAttempt =>
    is2xx
      ? { ok: false, kind: 'malformed', httpStatus: statusCode, code: 'EMALFORMED', message, cause, durationMs }
      : { ok: false, kind: 'answer', httpStatus: statusCode, retryAfterMs, durationMs };
  let parsed: unknown;
  try {
    parsed = parseJson(text);
  } catch (err) {
    return unreadable('response body is not valid JSON', err);
  }
  const envelope = toEnvelope(parsed);
  if (!envelope) return unreadable('response body is not the {Status, Data, Message} envelope');
  if (is2xx && envelope.Status === 0)
    return { ok: true, envelope, httpStatus: statusCode, durationMs, bytes: text.length, ...(location ? { location } : {}) };
  return {
    ok: false,
    kind: 'answer',
    httpStatus: statusCode,
    status: envelope.Status,
    message: envelope.Message || undefined,
    retryAfterMs,
    durationMs,
  };
}

/** The envelope of a parsed body (Status as a number or a digit string, Message as text), or undefined. */
export function toEnvelope(value: unknown): Envelope | undefined {
  if (!isRecord(value)) return undefined;
  const v = value;
  const status =
    typeof v.Status === 'number' ? v.Status : typeof v.Status === 'string' && /^-?\d+$/.test(v.Status) ? Number(v.Status) : undefined;
  if (status === undefined) return undefined;
  const message = typeof v.Message === 'string' ? v.Message : v.Message === undefined || v.Message === null ? '' : String(v.Message);
  return { ...v, Status: status, Data: v.Data, Message: message };
}

/** TotalCount as a number: a finite number or a digit string; undefined otherwise. */
export function countOf(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && /^\d+$/.test(value)) return Number(value);
  return undefined;
}

/** A success whose Data is not what the request asks for. */
export function unexpected(method: string, path: string, what: string): PlatformError {
  return new PlatformError(`${method} ${path} failed: HTTP 200, Status 0 but ${what}`, {
    method,
    path,
    httpStatus: 200,
    status: 0,
    platformMessage: what,
  });
}

/** Data as an array; null or absent is none. */
export function asArray(data: unknown, method: string, path: string): unknown[] {
  if (Array.isArray(data)) return data;
  if (data === null || data === undefined) return [];
  throw unexpected(method, path, 'Data is not an array');
}

export function asObject(data: unknown, method: string, path: string): Record<string, unknown> {
  if (isRecord(data)) return data;
  throw unexpected(method, path, 'Data is not an object');
}

/** An item read by ID: Data itself, or the one element of an array. */
export function itemInAnswer(data: unknown, method: string, path: string): Record<string, unknown> {
  return asObject(Array.isArray(data) && data.length === 1 ? (data[0] as unknown) : data, method, path);
}

/** An ID as a string: Data itself, or its Id / ID / ListDataID. */
export function idInAnswer(data: unknown, method: string, path: string): string {
  const direct = itemId(data);
  if (direct !== null) return direct;
  if (isRecord(data)) {
    for (const key of ['Id', 'ID', 'id', 'ListDataID']) {
      const v = itemId(data[key]);
      if (v !== null) return v;
    }
  }
  throw unexpected(method, path, 'Data holds no ID');
}

/**
 * A new hook's ID: from Data (see idInAnswer), or else the last segment of the Location header
 * (taken at once when Data is empty).
 */
export function hookIdInAnswer(data: unknown, location: string | undefined, method: string, path: string): string {
  const fromLocation = location?.split('?')[0]?.replace(/\/+$/, '').split('/').pop();
  if ((data === null || data === undefined || data === '') && fromLocation) return decodeURIComponent(fromLocation);
  try {
    return idInAnswer(data, method, path);
  } catch (err) {
    if (fromLocation) return decodeURIComponent(fromLocation);
    throw err;
  }
}

const APP_ID_KEYS = ['AppID', 'AppId', 'ApplicationID', 'ID', 'Id'] as const;
const LIST_ID_KEYS = ['ListID', 'ListId', 'ID', 'Id'] as const;
/** A list record's application: never its own ID or Id. */
const LIST_APP_KEYS = ['AppID', 'AppId', 'ApplicationID'] as const;
const TITLE_KEYS = ['Title', 'Name', 'DisplayName'] as const;

/** The applications of a discovery answer; the title falls back to the ID. */
export function applicationsInAnswer(data: unknown, method: string, path: string): PlatformApplication[] {
  return discoveryRecords(data, method, path).map((o) => {
    const id = stringField(o, APP_ID_KEYS);
    if (id === undefined) throw unexpected(method, path, `an application has no ID (looked for ${APP_ID_KEYS.join(', ')})`);
    return { id, title: stringField(o, TITLE_KEYS) ?? id };
  });
}

/** The lists of an application's discovery answer; a list naming no application is `appId`'s. */
export function listsInAnswer(data: unknown, appId: string, method: string, path: string): PlatformListRef[] {
  return discoveryRecords(data, method, path).map((o) => {
    const listID = stringField(o, LIST_ID_KEYS);
    if (listID === undefined) throw unexpected(method, path, `a list has no ID (looked for ${LIST_ID_KEYS.join(', ')})`);
    return {
      appID: stringField(o, LIST_APP_KEYS) ?? appId,
      listID,
      title: stringField(o, TITLE_KEYS) ?? listID,
      description: stringField(o, ['Description']) ?? '',
    };
  });
}

/** The records of a discovery answer: Data itself, or the array in Data.Items, Data.List or Data.Data. */
function discoveryRecords(data: unknown, method: string, path: string): Record<string, unknown>[] {
  let records: unknown = data;
  if (isRecord(records)) {
    const o = records;
    records = ['Items', 'List', 'Data'].map((k) => o[k]).find(Array.isArray);
    if (records === undefined) throw unexpected(method, path, 'Data is neither an array nor holds one in Items, List or Data');
  }
  return asArray(records, method, path).filter(isRecord);
}

/** The first of `keys` that holds a non-empty string or a number, as a string. */
function stringField(o: Record<string, unknown>, keys: readonly string[]): string | undefined {
  for (const key of keys) {
    const v = o[key];
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  }
  return undefined;
}

/**
 * The rows of a directory answer: `Data` as an array, or an object holding
 * one (`Items`, `List`, `Rows`, `Records`, `Data`...); null or an empty
 * object is no rows. Entries that are not objects are dropped.
 */
export function directoryRows(data: unknown, method: string, path: string): Record<string, unknown>[] {
  if (data === null || data === undefined) return [];
  if (Array.isArray(data)) return data.filter(isRecord);
  if (isRecord(data)) {
    const inner = Object.values(data).find((v) => Array.isArray(v));
    if (inner !== undefined) return (inner as unknown[]).filter(isRecord);
    if (Object.keys(data).length === 0) return [];
  }
  throw unexpected(method, path, 'Data is not a list of entries');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
