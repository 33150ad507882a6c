/**
 * Writing platform items into a mirror table, run as listsync's own write
 * (never captured by the triggers). Per batch of up to 1000 items, a fixed
 * number of set-based statements, never one per row:
 *
 * 1. one read of the stored state of the batch's ids (version, soft delete,
 *    open local change), through the primary key and the outbox's index
 *    (skipped while a first load finds only new rows: see `expectNew`);
 * 2. one `COPY ... FROM STDIN` for the ids not stored yet, streamed a slice
 *    of rows at a time (`INSERT ... ON CONFLICT DO NOTHING` from unnest(...)
 *    when another writer inserted one of them meanwhile);
 * 3. one `UPDATE ... FROM unnest(...)` for the rows whose version moved (or
 *    that come back after a soft delete).
 *
 * Rows already at the received version cost only the read: they are neither
 * converted nor rewritten (not even `_synced_at`). The writes repeat the
 * checks of the read (ON CONFLICT DO NOTHING, version and open-change
 * conditions), so a concurrent writer can never make them overwrite a newer
 * row or a local edit.
 *
 * - A row whose `row_version` equals the stored one is not rewritten, unless
 *   it was soft-deleted: then it is undeleted. Versions never go backwards: an
 *   older version than the stored one (a query that lags behind a write, a
 *   delayed event) is counted unchanged and not written.
 * - An item without a version is rewritten only when its `_raw` differs.
 * - A row with an open local change (outbox status pending/sending/conflict)
 *   is left alone and returned in `skippedPending`; the caller decides about
 *   conflicts.
 * - A value that does not convert lands as NULL, the item stays whole in
 *   `_raw`, and it is counted (`failedValues`, `failures`).
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Knex } from '../db.js';
import { PG, pgCode } from '../errors.js';
import { itemId, itemVersion } from '../platform/item-identity.js';
import type { Item, PlatformUser } from '../platform/types.js';
import { openChangeExists, openChangeLookup } from '../store/outbox.js';
import type { ColumnKind } from './column-types.js';
import { fromPlatformToSql, NOT_CONVERTED, scalarString } from './convert.js';
import { USERS_COLUMNS } from './ddl.js';
import { qualifiedName, quoteIdent, quoteLiteral } from './naming.js';
import { arrayLiteral } from './pg-text.js';
import { historyStatement } from './history.js';
import { RawJsonWriter } from './raw-json.js';
import { closestText, escapeStorable, hasUnstorable, isStorable, storableJson, storableValue } from '../storable.js';
import { FIXED_COLUMNS, type TableMapping } from './table-mapping.js';
import { inTransaction, isMarked, markListsyncWriter, noteMarked, withListsyncWriter, WRITER_MARK } from './own-writes.js';

export { markListsyncWriter, withListsyncWriter } from './own-writes.js';

/** Items per batch (one read, at most one insert and one update). */
export const UPSERT_BATCH_SIZE = 1000;
/** At most this many failures are listed (all are counted). */
export const MAX_LISTED_FAILURES = 100;

export interface UpsertFailure {
  /** The item's id ('' when the item has none). */
  id: string;
  /** The platform field whose value did not convert (or `_raw`). */
  field: string;
  raw: unknown;
}

export interface SkippedPending {
  id: string;
  /** The version the platform sent now. */
  remoteVersion: number | null;
  /** The version the open local change was made against. */
  baseVersion: number | null;
  item: Item;
}

export interface UpsertResult {
  inserted: number;
  updated: number;
  /** Rows already at the received version (not rewritten). */
  unchanged: number;
  /** Rows that had `_deleted_at` set and came back (counted in `updated` too). */
  undeleted: number;
  /**
   * Values that did not convert (stored NULL, kept in `_raw`), in the rows
   * written by this call (an unchanged row was counted when it was written),
   * plus items without a usable id or version.
   */
  failedValues: number;
  /** The first failures, up to MAX_LISTED_FAILURES. */
  failures: UpsertFailure[];
  /** Items not written because a local change to them is open. */
  skippedPending: SkippedPending[];
  /** Items without a usable id: not written at all (also listed in failures). */
  invalid: number;
  /**
   * Items that omit a field the mirror has a column for: that column (and its `_raw` key) keeps
   * what it held. Not counted (and written NULL) when the platform is known to omit empty values
   * (`platform.omitsEmptyValues`).
   */
  missingKeys: number;
  /**
   * Rows written with text PostgreSQL cannot hold (NUL, lone surrogates): the typed columns have the
   * closest text (U+FFFD in their place), `_raw` the exact values, escaped (src/storable.ts).
   */
  unstorable: number;
}

type Db = Knex | Knex.Transaction;

export function emptyUpsertResult(): UpsertResult {
  return {
    inserted: 0,
    updated: 0,
    unchanged: 0,
    undeleted: 0,
    failedValues: 0,
    failures: [],
    skippedPending: [],
    invalid: 0,
    missingKeys: 0,
    unstorable: 0,
  };
}

export interface UpsertOptions {
  /**
   * The items are probably all new (the previous page was): the batch is
   * first copied in as it is, and the read of what is stored happens only
   * when one of its IDs turns out to be there already. A hint, never a risk:
   * the first existing row undoes the copy.
   */
  expectNew?: boolean;
}

/**
 * Upserts platform items into the mirror table. `db` may be a transaction
 * (recommended: the caller's page + checkpoint transaction) or a Knex, in
 * which case the batches run in a transaction of their own. Either way the
 * transaction is marked as listsync's own write before anything is written
 * (by the first statement of a batch that is copied in, so the mark costs no
 * round trip of its own).
 */
export async function upsertItems(
  db: Db,
  mapping: TableMapping,
  items: readonly Item[],
  zone: string,
  options: UpsertOptions = {},
): Promise<UpsertResult> {
  const result = emptyUpsertResult();
  if (items.length === 0) return result;
  const sql = statementsFor(mapping);
  await inTransaction(db, async (trx) => {
    let expectNew = options.expectNew ?? false;
    for (let start = 0; start < items.length; start += UPSERT_BATCH_SIZE) {
      const batch = items.slice(start, start + UPSERT_BATCH_SIZE);
      const before = result.inserted;
      await upsertBatch(trx, mapping, sql, batch, zone, result, expectNew);
      expectNew = result.inserted - before === batch.length;
    }
  });
  return result;
}

interface BatchRow {
  id: string;
  version: number | null;
  versionText: string | null;
  item: Item;
}

interface StoredState {
  id: string;
  present: boolean;
  row_version: number | null;
  deleted: boolean | null;
  pending: boolean;
  base_version: number | null;
}

async function upsertBatch(
  trx: Knex.Transaction,
  mapping: TableMapping,
  sql: Statements,
  items: readonly Item[],
  zone: string,
  result: UpsertResult,
  expectNew: boolean,
): Promise<void> {
  const fail = (f: UpsertFailure): void => {
    result.failedValues++;
    if (result.failures.length < MAX_LISTED_FAILURES) result.failures.push(f);
  };
  const byId = batchRows(mapping, items, result, fail);
  if (byId.size === 0) return;
  if (expectNew && (await copyAllNew(trx, mapping, sql, [...byId.values()], zone, result, fail))) return;
  await markListsyncWriter(trx);
  await upsertRead(trx, mapping, sql, byId, zone, result, rowReport(result, fail));
}

/** What encoding rows finds out about them: values that did not convert, keys missing, text escaped. */
interface RowReport {
  fail(f: UpsertFailure): void;
  missingKeys(): void;
  unstorable(): void;
}

function rowReport(result: UpsertResult, fail: (f: UpsertFailure) => void): RowReport {
  return {
    fail,
    missingKeys: () => void result.missingKeys++,
    unstorable: () => void result.unstorable++,
  };
}

/** One row per id: the highest version wins (later ones on a tie). Items without a usable id are counted and left out. */
function batchRows(
  mapping: TableMapping,
  items: readonly Item[],
  result: UpsertResult,
  fail: (f: UpsertFailure) => void,
): Map<string, BatchRow> {
  const byId = new Map<string, BatchRow>();
  for (const item of items) {
    const id = itemId(item?.[mapping.idField]);
    if (id === null) {
      result.invalid++;
      fail({ id: '', field: mapping.idField, raw: item?.[mapping.idField] });
      continue;
    }
    const rawVersion = item[mapping.versionField];
    const versionText = itemVersion(rawVersion);
    if (versionText === null && rawVersion !== undefined && rawVersion !== null && rawVersion !== '')
      fail({ id, field: mapping.versionField, raw: rawVersion });
    const row: BatchRow = { id, version: versionText === null ? null : Number(versionText), versionText, item };
    const prev = byId.get(id);
    if (!prev || prev.version === null || (row.version !== null && row.version >= prev.version)) byId.set(id, row);
  }
  return byId;
}

/**
 * A batch expected to be all new, copied in without reading what is stored
 * first. False when one of its IDs is there already (nothing was written or
 * counted then; the caller takes the reading path).
 */
async function copyAllNew(
  trx: Knex.Transaction,
  mapping: TableMapping,
  sql: Statements,
  rows: readonly BatchRow[],
  zone: string,
  result: UpsertResult,
  fail: (f: UpsertFailure) => void,
): Promise<boolean> {
  // Counted only when the copy stands (otherwise the reading path encodes the rows again).
  const failures: UpsertFailure[] = [];
  const counted = emptyUpsertResult();
  const encoded = new Encoder(
    mapping,
    rows,
    zone,
    rowReport(counted, (f) => failures.push(f)),
  );
  if (!(await copyFresh(trx, sql, encoded))) return false;
  for (const f of failures) fail(f);
  result.missingKeys += counted.missingKeys;
  result.unstorable += counted.unstorable;
  result.inserted += rows.length;
  if (sql.history) await trx.raw(sql.history, [arrayLiteral(rows.map((r) => r.id))]);
  return true;
}

/** The reading path: what is stored decides between insert, update, unchanged and an open local change. */
async function upsertRead(
  trx: Knex.Transaction,
  mapping: TableMapping,
  sql: Statements,
  byId: ReadonlyMap<string, BatchRow>,
  zone: string,
  result: UpsertResult,
  report: RowReport,
): Promise<void> {
  // 1. What is stored for these ids.
  const state = (await trx.raw(sql.read, [arrayLiteral([...byId.keys()]), mapping.listName])) as { rows: StoredState[] };
  const fresh: BatchRow[] = [];
  const changed: BatchRow[] = [];
  let undeleting = 0;
  for (const st of state.rows) {
    const r = byId.get(st.id)!;
    if (st.pending) {
      result.skippedPending.push({ id: r.id, remoteVersion: r.version, baseVersion: st.base_version, item: r.item });
    } else if (!st.present) {
      fresh.push(r);
    } else if (st.deleted || r.version === null || st.row_version === null || r.version > st.row_version) {
      changed.push(r);
      if (st.deleted) undeleting++;
    } else {
      result.unchanged++;
    }
  }

  // 2. New rows.
  const candidates = fresh.length + changed.length;
  let inserted = 0;
  let updated = 0;
  const written: string[] = [];
  const write = async (statement: string, bindings: readonly string[]): Promise<number> => {
    const res = await trx.raw(statement, bindings);
    if (sql.history) for (const row of (res as { rows: { id: string }[] }).rows) written.push(row.id);
    return rowCount(res);
  };
  const update = async (encoded: Encoder): Promise<number> => {
    const bindings = bindingsOf(mapping, await encoded.all());
    if (!encoded.anyMissing) return write(sql.update, [...bindings, mapping.listName]);
    return write(sql.updateKeeping, [
      ...bindings,
      arrayLiteral(encoded.missingColumns),
      arrayLiteral(encoded.missingKeys),
      mapping.listName,
    ]);
  };
  if (fresh.length > 0) {
    const encoded = new Encoder(mapping, fresh, zone, report);
    if (await copyFresh(trx, sql, encoded)) {
      inserted = fresh.length;
      if (sql.history) for (const r of fresh) written.push(r.id);
    } else {
      inserted = await write(sql.insert, bindingsOf(mapping, await encoded.all()));
      // Inserted meanwhile by another writer (ON CONFLICT DO NOTHING skipped them): update those instead.
      if (inserted < fresh.length) updated += await update(encoded);
    }
  }

  // 3. Rows whose version moved, or that come back after a soft delete. The conditions are
  // checked again on the row itself: an unchanged item without a version is not rewritten.
  if (changed.length > 0) updated += await update(new Encoder(mapping, changed, zone, report));
  // 4. With history: the versions just written, in the same transaction, by one statement.
  if (sql.history && written.length > 0) await trx.raw(sql.history, [arrayLiteral(written)]);

  result.inserted += inserted;
  result.updated += updated;
  result.undeleted += Math.min(undeleting, updated);
  result.unchanged += candidates - inserted - updated;
}

function rowCount(res: unknown): number {
  return (res as { rowCount?: number | null }).rowCount ?? 0;
}

/**
 * One row's values in the order of `FIXED_COLUMNS` id, row version, created,
 * modified, then the mapped columns, then `_raw`: SQL text, or null. The
 * mapped columns the item has no key for are listed in `missing` (by index),
 * unless the platform omits empty values.
 */
function encodeRow(
  mapping: TableMapping,
  r: BatchRow,
  zone: string,
  writer: RawJsonWriter,
  report: RowReport,
  missing: number[],
): (string | null)[] {
  const fail = report.fail;
  const out: (string | null)[] = [
    r.id,
    r.versionText,
    instant(r, mapping.createdField, zone, fail),
    instant(r, mapping.modifiedField, zone, fail),
  ];
  // `_raw` first: a value with NUL or a lone surrogate is always escaped in JSON text, so an item
  // whose JSON has no backslash has no value that needs a closer look.
  const raw = rawJson(r, writer);
  const check = writer.lastHadBackslash;
  let unstorable = check && raw.escaped;
  const columns = mapping.columns;
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i]!;
    const value = r.item[c.field];
    if (value === undefined && !mapping.omitsEmptyValues && !Object.hasOwn(r.item, c.field)) missing.push(i);
    const v = fromPlatformToSql(c.kind, value, zone);
    if (v === NOT_CONVERTED) {
      fail({ id: r.id, field: c.field, raw: value });
      out.push(null);
    } else if (check && v !== null && !isStorable(v)) {
      unstorable = true;
      out.push(closestText(v));
    } else out.push(v);
  }
  if (unstorable) report.unstorable();
  if (missing.length > 0) report.missingKeys();
  out.push(raw.json);
  return out;
}

/**
 * A batch's rows encoded on demand, once each, in slices: the COPY streams
 * each slice to PostgreSQL as soon as it is encoded (the server parses one
 * slice while the next is converted), and the event loop runs between
 * slices, so the rate limiter's timers (and whatever else shares the
 * process) stay on time while a page is converted.
 */
class Encoder {
  readonly values: (string | null)[][] = [];
  /** Per row: whether its `_raw` text may hold a backslash (COPY's text format doubles them). */
  readonly rawBackslashes: boolean[] = [];
  /** Per row: the indexes of the mapped columns its item has no key for (an int[] literal), or null. */
  readonly missingColumns: (string | null)[] = [];
  /** Per row: those columns' field names (a text[] literal: their `_raw` keys), or null. */
  readonly missingKeys: (string | null)[] = [];
  /** Whether any row so far misses a key. */
  anyMissing = false;
  private readonly raw = new RawJsonWriter();

  constructor(
    private readonly mapping: TableMapping,
    private readonly rows: readonly BatchRow[],
    private readonly zone: string,
    private readonly report: RowReport,
  ) {}

  /** The next slice of rows encoded (first index, end); null when every row is. */
  async next(): Promise<[number, number] | null> {
    const start = this.values.length;
    if (start >= this.rows.length) return null;
    if (start > 0) await yieldToEventLoop();
    const end = Math.min(this.rows.length, start + sliceSize(start));
    const missing: number[] = [];
    for (let i = start; i < end; i++) {
      this.values.push(encodeRow(this.mapping, this.rows[i]!, this.zone, this.raw, this.report, missing));
      this.rawBackslashes.push(this.raw.lastHadBackslash);
      this.noteMissing(missing);
      missing.length = 0;
    }
    return [start, end];
  }

  private noteMissing(missing: readonly number[]): void {
    if (missing.length === 0) {
      this.missingColumns.push(null);
      this.missingKeys.push(null);
      return;
    }
    this.anyMissing = true;
    this.missingColumns.push(`{${missing.join(',')}}`);
    this.missingKeys.push(arrayLiteral(missing.map((i) => escapeStorable(this.mapping.columns[i]!.field))));
  }

  /** Every row's values (the ones not encoded yet are encoded now). */
  async all(): Promise<(string | null)[][]> {
    while (await this.next());
    return this.values;
  }
}

/**
 * Rows converted between two turns of the event loop: a small first slice, so
 * that PostgreSQL has rows to parse early, then doubling up to 200 (a few
 * milliseconds of work), so that later slices cost few turns.
 */
function sliceSize(start: number): number {
  return Math.min(MAX_ROWS_PER_SLICE, Math.max(FIRST_SLICE_ROWS, start));
}
const FIRST_SLICE_ROWS = 25;
const MAX_ROWS_PER_SLICE = 200;
const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The bindings shared by the insert and the update: one array per column, raw documents joined by U+001E. */
function bindingsOf(mapping: TableMapping, encoded: readonly (string | null)[][]): string[] {
  const column = (i: number): (string | null)[] => encoded.map((values) => values[i]!);
  const rawAt = 4 + mapping.columns.length;
  return [
    arrayLiteral(column(0)),
    arrayLiteral(column(1)),
    arrayLiteral(column(2)),
    arrayLiteral(column(3)),
    // JSON text has every control character escaped (RawJsonWriter does as JSON.stringify), so U+001E
    // never occurs inside a document: joining by it saves escaping ~0.5 MB per batch into an array literal.
    column(rawAt).join(RECORD_SEPARATOR),
    ...mapping.columns.map((_c, i) => arrayLiteral(column(4 + i))),
  ];
}

/**
 * New rows by COPY, the cheapest way into PostgreSQL (no statement to plan,
 * no arrays to unpack), each slice sent as soon as it is encoded. In a
 * savepoint: when another writer inserted one of the ids meanwhile (a unique
 * violation, which may arrive while later slices are still being sent), only
 * the COPY is undone and the caller inserts with ON CONFLICT DO NOTHING
 * instead. Returns whether the COPY wrote every row.
 *
 * One round trip before the COPY: the writer mark (when the transaction does
 * not carry it yet), the savepoint and the time for `_synced_at` go together.
 * The savepoint is not released: it ends with the transaction, and releasing
 * it would cost a round trip per page for nothing.
 */
async function copyFresh(trx: Knex.Transaction, sql: Statements, encoded: Encoder): Promise<boolean> {
  const mark = isMarked(trx) ? '' : `${WRITER_MARK}; `;
  const results = (await trx.raw(`${mark}savepoint ${COPY_SAVEPOINT}; select now()::text as now`)) as { rows: { now: string }[] }[];
  noteMarked(trx);
  const now = results.at(-1)!.rows[0]!.now;
  const synced = copyField(now);
  async function* lines(): AsyncGenerator<string> {
    for (let slice = await encoded.next(); slice; slice = await encoded.next()) yield copyLines(sql, encoded, slice, synced);
  }
  try {
    const connection = (await trx.client.acquireConnection()) as pg.Client;
    await pipeline(Readable.from(lines(), { objectMode: false, highWaterMark: COPY_AHEAD_BYTES }), connection.query(copyFrom(sql.copy)));
  } catch (err) {
    if (pgCode(err) !== PG.uniqueViolation) throw err;
    await trx.raw(`rollback to savepoint ${COPY_SAVEPOINT}`);
    return false;
  }
  return true;
}

/** COPY text of rows [start, end), each ending with `_synced_at`. */
function copyLines(sql: Statements, encoded: Encoder, [start, end]: [number, number], synced: string): string {
  const last = sql.copyEscapes.length - 1;
  let text = '';
  for (let r = start; r < end; r++) {
    const values = encoded.values[r]!;
    // Every value of a row comes from the item's strings, numbers and booleans, and its JSON text
    // (`_raw`) has a backslash for every backslash, tab, line break and quote in any of its strings:
    // a row whose `_raw` has none has nothing to escape. The encoder knows which rows those are
    // without scanning their text.
    const escapes = encoded.rawBackslashes[r]!;
    for (let i = 0; i < last; i++) {
      const v = values[i]!;
      text += `${v === null ? '\\N' : escapes && sql.copyEscapes[i] ? copyField(v) : v}\t`;
    }
    const raw = values[last]!;
    text += `${escapes ? raw.replaceAll('\\', '\\\\') : raw}\t${synced}\n`;
  }
  return text;
}

/** COPY text encoded ahead of what the connection has taken (about two slices). */
const COPY_AHEAD_BYTES = 256 * 1024;

const COPY_SAVEPOINT = 'listsync_copy';
/** Column kinds whose converted values are digits, signs, separators and `t`/`f` only. */
const PLAIN_KINDS: ReadonlySet<ColumnKind> = new Set(['numeric', 'boolean', 'date', 'timestamptz']);

/** A value in COPY's text format: backslash, tab, newline and carriage return escaped; null as \N. */
function copyField(v: string | null): string {
  if (v === null) return '\\N';
  return COPY_SPECIAL.test(v) ? v.replace(COPY_SPECIALS, (c) => COPY_ESCAPES[c]!) : v;
}

const COPY_SPECIAL = /[\\\t\n\r]/;
const COPY_SPECIALS = /[\\\t\n\r]/g;
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** Separates the `_raw` documents of a batch in one text parameter. */
const RECORD_SEPARATOR = '\u001e';

interface Statements {
  /** Bindings: ids, list name. */
  read: string;
  /** COPY of new rows, every written column in the order of `encodeRow`, then `_synced_at`. */
  copy: string;
  /**
   * Per value of `encodeRow`: whether it may hold what COPY treats specially.
   * Versions, numbers, booleans, dates and times are written by the
   * converters in formats that never do.
   */
  copyEscapes: boolean[];
  /** Bindings: the encoded rows. */
  insert: string;
  /** Bindings: the encoded rows, list name. */
  update: string;
  /**
   * The update for a batch where items omit keys of mapped columns: those columns, and those keys
   * of `_raw`, keep what they hold. Bindings: the encoded rows, the missing column indexes and
   * field names per row, list name.
   */
  updateKeeping: string;
  /** With history only (insert and update then return the ids they wrote). Bindings: those ids. */
  history?: string;
}

const statementCache = new WeakMap<TableMapping, Statements>();

/**
 * The three statements of a batch. Lookups are LATERAL subqueries with
 * OFFSET 0 or scalar subqueries: executed per row through an index, whatever
 * the planner's statistics say (a fresh, unanalysed table must never turn
 * into a hash join over the whole table).
 */
function statementsFor(mapping: TableMapping): Statements {
  const cached = statementCache.get(mapping);
  if (cached) return cached;
  const t = qualifiedName(mapping.schema, mapping.table);
  const q = quoteIdent;
  const F = FIXED_COLUMNS;
  const paramCast = (kind: ColumnKind): string => (kind === 'text[]' ? 'text[]' : kind === 'jsonb' ? 'jsonb[]' : `${kind}[]`);
  const valueExpr = (kind: ColumnKind, alias: string): string => (kind === 'text[]' ? `s.${alias}::text[]` : `s.${alias}`);
  const aliases = mapping.columns.map((_c, i) => `c${i}`);
  const unnestOf = (extra: readonly string[]): string =>
    `unnest(${[
      '?::text[]',
      '?::bigint[]',
      '?::timestamptz[]',
      '?::timestamptz[]',
      'string_to_array(?::text, chr(30))',
      ...mapping.columns.map((c) => `?::${paramCast(c.kind)}`),
      ...extra.map(() => '?::text[]'),
    ].join(', ')}) as s(${['id', 'row_version', 'created_at', 'modified_at', 'raw', ...aliases, ...extra].join(', ')})`;
  const unnest = unnestOf([]);

  const read = readStatement(t);

  const target = [
    F.id,
    F.rowVersion,
    F.createdAt,
    F.modifiedAt,
    ...mapping.columns.map((c) => c.column),
    F.raw,
    F.syncedAt,
    F.deletedAt,
  ].map(q);
  const values = [
    's.id',
    's.row_version',
    's.created_at',
    's.modified_at',
    ...mapping.columns.map((c, i) => valueExpr(c.kind, aliases[i]!)),
    's.raw::jsonb',
    'now()',
    'null::timestamptz',
  ];
  const returning = mapping.history ? `\nreturning ${q(F.id)} as id` : '';
  const insert = `
insert into ${t} (${target.join(', ')})
select ${values.join(', ')}
  from ${unnest}
on conflict (${q(F.id)}) do nothing${returning}`;

  // A rewritten row keeps the `_raw` keys of removed and retired fields (the item no longer has them;
  // they are the raw values of columns kept with their data), and those of keys the item omits.
  const rawAt = 4 + mapping.columns.length;
  const kept = mapping.keptRawKeys ?? [];
  const keptRaw = kept.length === 0 ? '' : `${rawSubset(`${quoteLiteral(arrayLiteral(kept.map(escapeStorable)))}::text[]`)} || `;
  const updateOf = (keeping: boolean): string => {
    const sets = target.slice(1).map((col, i) => {
      const at = i + 1;
      let value = values[at]!;
      if (at === rawAt) value = `${keptRaw}${keeping ? `${rawSubset('s.missing_keys::text[]')} || ` : ''}${value}`;
      else if (keeping && at > 3 && at < rawAt)
        value = `case when ${at - 4} = any(s.missing_columns::int[]) then t.${col} else ${value} end`;
      return `${col} = ${value}`;
    });
    return `
update ${t} as t set ${sets.join(', ')}
  from ${keeping ? unnestOf(['missing_columns', 'missing_keys']) : unnest}
 where t.${q(F.id)} = s.id
   and ((t.${q(F.rowVersion)} is null and s.row_version is not null)
        or s.row_version > t.${q(F.rowVersion)}
        or t.${q(F.deletedAt)} is not null
        or (s.row_version is null and t.${q(F.raw)} is distinct from s.raw::jsonb))
   and ${openChangeExists(`t.${q(F.id)}`)} is null${mapping.history ? `\nreturning t.${q(F.id)} as id` : ''}`;
  };
  const update = updateOf(false);
  const updateKeeping = updateOf(true);

  const statements: Statements = {
    read,
    ...copyStatement(mapping, t),
    insert,
    update,
    updateKeeping,
    ...(mapping.history ? { history: historyStatement(mapping) } : {}),
  };
  statementCache.set(mapping, statements);
  return statements;
}

/** Per ID of a batch: whether the row is there, its version, whether it is deleted, and its open change. Bindings: the IDs. */
function readStatement(t: string): string {
  const q = quoteIdent;
  const F = FIXED_COLUMNS;
  return `
select s.id, c.id is not null as present, c.row_version, c.deleted, p.hit is not null as pending, p.base_version
  from unnest(?::text[]) as s(id)
  left join lateral (
    select cur.${q(F.id)} as id, cur.${q(F.rowVersion)} as row_version, cur.${q(F.deletedAt)} is not null as deleted
      from ${t} cur where cur.${q(F.id)} = s.id offset 0) c on true
  left join lateral (
    ${openChangeLookup('s.id')}) p on true`;
}

/** The COPY of a first load's rows, and which of its columns are escaped (see `Statements.copyEscapes`). */
function copyStatement(mapping: TableMapping, t: string): Pick<Statements, 'copy' | 'copyEscapes'> {
  const F = FIXED_COLUMNS;
  const columns = [F.id, F.rowVersion, F.createdAt, F.modifiedAt, ...mapping.columns.map((c) => c.column), F.raw, F.syncedAt];
  return {
    copy: `copy ${t} (${columns.map(quoteIdent).join(', ')}) from stdin`,
    copyEscapes: [true, false, false, false, ...mapping.columns.map((c) => !PLAIN_KINDS.has(c.kind)), true],
  };
}

/** The keys (a text[] expression) of the stored row's `_raw` that it has, as a jsonb object. */
function rawSubset(keys: string): string {
  const raw = `t.${quoteIdent(FIXED_COLUMNS.raw)}`;
  return `coalesce((select jsonb_object_agg(e.key, e.value) from jsonb_each(${raw}) e where e.key = any(${keys})), '{}'::jsonb)`;
}

function instant(r: BatchRow, field: string, zone: string, fail: (f: UpsertFailure) => void): string | null {
  const raw = r.item[field];
  const v = fromPlatformToSql('timestamptz', raw, zone);
  if (v !== NOT_CONVERTED) return v;
  fail({ id: r.id, field, raw });
  return null;
}

/**
 * The item as JSON for `_raw`. Strings jsonb cannot hold (NUL, lone surrogates) are kept exactly,
 * escaped (src/storable.ts), and counted as unstorable.
 */
function rawJson(r: BatchRow, writer: RawJsonWriter): { json: string; escaped: boolean } {
  let json: string;
  try {
    json = writer.write(r.item);
  } catch {
    json = JSON.stringify(r.item, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  }
  // Without a backslash there is no escape jsonb could refuse, and no escape mark: JSON writes NUL,
  // lone surrogates and the mark (U+0010) as \u escapes.
  if (!writer.lastHadBackslash || !json.includes('\\u') || !hasUnstorable(r.item)) return { json, escaped: false };
  const storable = storableValue(r.item) as Record<string, unknown>;
  try {
    return { json: writer.write(storable), escaped: true };
  } catch {
    return { json: JSON.stringify(storable, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)), escaped: true };
  }
}

// ---------------------------------------------------------------- users

export interface UsersUpsertResult {
  inserted: number;
  updated: number;
  unchanged: number;
  /** Users without a UserID: not written. */
  invalid: number;
}

const USER_FIELDS: Record<(typeof USERS_COLUMNS)[number], string> = {
  user_id: 'UserID',
  name: 'Name',
  email: 'Email',
  account: 'Account',
  photo: 'Photo',
  line_manager: 'LineManager',
};

/** Upserts users (POST /users/search results); a user is rewritten only when its `_raw` changed. */
export async function upsertUsers(
  db: Db,
  schema: string,
  table: string,
  users: readonly (PlatformUser | Record<string, unknown>)[],
): Promise<UsersUpsertResult> {
  const result: UsersUpsertResult = { inserted: 0, updated: 0, unchanged: 0, invalid: 0 };
  if (users.length === 0) return result;
  const t = qualifiedName(schema, table);
  const cols = [...USERS_COLUMNS];
  const sql = `
with up as (
  insert into ${t} as t (${[...cols, '_raw', '_synced_at'].map(quoteIdent).join(', ')})
  select ${cols.map((c) => `s.${quoteIdent(c)}`).join(', ')}, s._raw, now()
    from unnest(${cols.map(() => '?::text[]').join(', ')}, ?::jsonb[]) as s(${[...cols, '_raw'].map(quoteIdent).join(', ')})
  on conflict (${quoteIdent('user_id')}) do update set ${[...cols.slice(1), '_raw', '_synced_at'].map((c) => `${quoteIdent(c)} = excluded.${quoteIdent(c)}`).join(', ')}
   where t._raw is distinct from excluded._raw
  returning (t.xmax = 0) as inserted
)
select (select count(*) from up where inserted)::int as inserted, (select count(*) from up where not inserted)::int as updated`;
  await withListsyncWriter(db, async (trx) => {
    for (let start = 0; start < users.length; start += UPSERT_BATCH_SIZE) {
      const byId = new Map<string, Record<string, unknown>>();
      for (const u of users.slice(start, start + UPSERT_BATCH_SIZE)) {
        const id = itemId((u as Record<string, unknown>)?.UserID);
        if (id === null) result.invalid++;
        else byId.set(id, u as Record<string, unknown>);
      }
      if (byId.size === 0) continue;
      const values = cols.map(() => [] as (string | null)[]);
      const raws: string[] = [];
      for (const [id, u] of byId) {
        cols.forEach((c, i) => {
          const v = c === 'user_id' ? id : userText(u[USER_FIELDS[c]]);
          values[i]!.push(v);
        });
        raws.push(storableJson(u));
      }
      const res = (await trx.raw(sql, [...values.map(arrayLiteral), arrayLiteral(raws)])) as {
        rows: { inserted: number; updated: number }[];
      };
      const r = res.rows[0]!;
      result.inserted += r.inserted;
      result.updated += r.updated;
      result.unchanged += byId.size - r.inserted - r.updated;
    }
  });
  return result;
}

function userText(v: unknown): string | null {
  if (v === null || v === undefined || v === '') return null;
  const s = scalarString(v) ?? (typeof v === 'boolean' ? String(v) : JSON.stringify(v));
  return closestText(s);
}
