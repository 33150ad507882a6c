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
import type { Item } from '../platform/types.js';
import { arrayLiteral } from './pg-text.js';
import { RawJsonWriter } from './raw-json.js';
import { escapeStorable } from '../storable.js';
import type { TableMapping } from './table-mapping.js';
import { inTransaction, isMarked, markListsyncWriter, noteMarked, WRITER_MARK } from './own-writes.js';
import { bindingsOf, copyField, copyLines, encodeRow, type EncodedRows } from './row-encoding.js';
import { statementsFor, type Statements } from './upsert-sql.js';
import {
  MAX_LISTED_FAILURES,
  UPSERT_BATCH_SIZE,
  batchRows,
  classifyStored,
  countWrites,
  emptyUpsertResult,
  rowReport,
  type BatchRow,
  type RowReport,
  type StoredState,
  type UpsertFailure,
  type UpsertResult,
} from './upsert-rows.js';

export { markListsyncWriter, withListsyncWriter } from './own-writes.js';
export {
  UPSERT_BATCH_SIZE,
  MAX_LISTED_FAILURES,
  emptyUpsertResult,
  type SkippedPending,
  type UpsertFailure,
  type UpsertResult,
} from './upsert-rows.js';
export { upsertUsers, type UsersUpsertResult } from './upsert-users.js';

type Db = Knex | Knex.Transaction;

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
  const rows = classifyStored(byId, state.rows);
  const { fresh, changed } = rows;

  // 2. New rows.
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

  countWrites(result, rows, inserted, updated);
}

function rowCount(res: unknown): number {
  return (res as { rowCount?: number | null }).rowCount ?? 0;
}

/**
 * A batch's rows encoded on demand, once each, in slices: the COPY streams
 * each slice to PostgreSQL as soon as it is encoded (the server parses one
 * slice while the next is converted), and the event loop runs between
 * slices, so the rate limiter's timers (and whatever else shares the
 * process) stay on time while a page is converted.
 */
class Encoder implements EncodedRows {
  /** Per row: its values, or undefined once its COPY text was made (see `release`). */
  readonly values: ((string | null)[] | undefined)[] = [];
  /** Per row: whether its `_raw` text may hold a backslash (COPY's text format doubles them). */
  readonly rawBackslashes: boolean[] = [];
  /** Per row: the indexes of the mapped columns its item has no key for (an int[] literal), or null. */
  readonly missingColumns: (string | null)[] = [];
  /** Per row: those columns' field names (a text[] literal: their `_raw` keys), or null. */
  readonly missingKeys: (string | null)[] = [];
  /** Whether any row so far misses a key. */
  anyMissing = false;
  private readonly raw = new RawJsonWriter();
  private encoded = 0;
  private released = false;

  constructor(
    private readonly mapping: TableMapping,
    private readonly rows: readonly BatchRow[],
    private readonly zone: string,
    private readonly report: RowReport,
  ) {}

  /** The next slice of rows encoded (first index, end); null when every row is. */
  async next(): Promise<[number, number] | null> {
    const start = this.encoded;
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
    this.encoded = end;
    return [start, end];
  }

  /**
   * Rows whose COPY text is made: their values are dropped, so that they die
   * young instead of living on with the batch (a copy that stands never needs
   * them again; one that is undone encodes them again in `all`).
   */
  release([start, end]: [number, number]): void {
    for (let r = start; r < end; r++) this.values[r] = undefined;
    this.released = true;
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
    if (this.released) this.encodeReleased();
    return this.values as (string | null)[][];
  }

  /** The released rows encoded again, without reporting them twice (what they fail was counted the first time). */
  private encodeReleased(): void {
    const missing: number[] = [];
    for (let r = 0; r < this.values.length; r++) {
      if (this.values[r] !== undefined) continue;
      this.values[r] = encodeRow(this.mapping, this.rows[r]!, this.zone, this.raw, UNREPORTED, missing);
      missing.length = 0;
    }
    this.released = false;
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
const UNREPORTED: RowReport = { fail: () => undefined, missingKeys: () => undefined, unstorable: () => undefined };

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
    for (let slice = await encoded.next(); slice; slice = await encoded.next()) {
      const text = copyLines(sql.copyEscapes, encoded, slice, synced);
      encoded.release(slice);
      yield text;
    }
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

/** COPY text encoded ahead of what the connection has taken (about two slices). */
const COPY_AHEAD_BYTES = 256 * 1024;

const COPY_SAVEPOINT = 'listsync_copy';
