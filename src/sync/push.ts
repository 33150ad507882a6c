/**
 * Push: local changes captured in the outbox -> the platform, version-checked.
 *
 * - Updates: PATCH with RowVersion = the change's base version and only the
 *   changed fields, as platform strings. A rejected PATCH is checked against
 *   the item's current version (GET by ID): a moved version is a conflict
 *   (settled by the list's policy); anything else stays pending with its
 *   error and is retried by a later push with backoff, until maxPushAttempts
 *   marks it failed. A retried PATCH whose earlier attempt was applied shows
 *   up as a mismatch at exactly base + 1 with our values: recognised as
 *   applied, so a change is never applied twice.
 * - Deletes (lists[].pushDeletes): the item is read by ID; gone counts as
 *   applied; at the base version it is deleted; a version that moved is a
 *   conflict (remote-wins brings the row back, local-wins deletes anyway,
 *   manual holds it).
 * - Creates: POST, then the mirror row takes the platform's ID. A create
 *   whose answer was lost (or that a stopped push left 'sending') is looked
 *   for on the platform first (src/sync/push/lost-creates.ts): found → adopted,
 *   not found → sent again, once; ambiguous → failed, naming the candidates.
 *   A withdrawn create (its local row was deleted) is looked for the same way
 *   and the item deleted if it was created after all.
 * - A change is settled with its row: what a write is known to have produced
 *   (the new version, the new ID, the values sent) goes into the mirror row
 *   (src/mirror/written.ts) in the transaction that marks the change applied,
 *   flagged `mirror_behind` until the item is re-read. Before sending
 *   anything, and after each batch, those items are re-read
 *   (src/sync/push/settle-mirror.ts); versions never go backwards in the mirror.
 *   So a kill between a write and its re-read never makes the next edit of
 *   the row carry a stale base version.
 * - A change whose base version is unknown is never sent with RowVersion 0:
 *   the item is read first; unless the platform still holds what the mirror
 *   last saw, it is a conflict. RowVersion 0 is sent only when a user asked
 *   to overwrite (local-wins, `conflicts resolve --keep local`).
 * - "The item is gone" is decided by asking both ways (a refused read by ID
 *   and an In query without it: src/platform/item-lookup.ts), never by one
 *   Status code. A delete of an item already gone is applied.
 * - A failing change does not stop the push: it is left pending with its
 *   error and backoff, and the others are sent. After
 *   MAX_CONSECUTIVE_FAILURES failures in a row (the platform is down) the
 *   push stops starting new changes; a refused key or a database error stops
 *   it at once.
 * - An edit naming a field since removed from the platform: the rest of it
 *   is sent; the removed field's part is kept, marked failed with a message.
 * - Applied changes stay in the outbox for `lists[].appliedRetentionDays`.
 * - While a change is being sent its row is 'sending' with a snapshot of what
 *   was sent; edits made meanwhile stay pending as the remainder. A change
 *   interrupted by an error (a refused key included) goes back to pending
 *   with the error and its attempt counted.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { UsageError, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import {
  attachCaptureTriggers,
  loadTableMapping,
  markListsyncWriter,
  toPlatform,
  upsertItems,
  type TableMapping,
  type UpsertResult,
} from '../mirror/index.js';
import { AuthError, PlatformError } from '../platform/errors.js';
import { isRefusalAnswer, queryItemsByIds, readItemOrGone, type ItemListRef } from '../platform/item-lookup.js';
import type { Item } from '../platform/types.js';
import { recordWrite } from '../mirror/written.js';
import { multiValueWire } from '../mirror/multi-value.js';
import { parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';
import { DEFAULT_REREAD_DELAYS_MS, settleMirror } from './push/settle-mirror.js';
import { LIST_JOBS, listLockName } from './exclusive.js';
import { runJob, type ActiveRun, type JobDeps, type PageDone } from './run-job.js';
import { recordConflict } from './push/conflicts.js';
import { findCreated, isOurWrite, type LostCreateSearch } from './push/lost-creates.js';
import { noteFieldRefusal } from './list-fields.js';
import { finishRun, zeroCounters, type RunCounters } from '../store/runs.js';
import * as outbox from '../store/outbox.js';
import type { OutboxRow } from '../store/outbox.js';

/** `signal`: the changes in flight are finished; the rest stay pending for the next push. */
export interface PushDeps extends JobDeps {
  clock?: () => Date;
  /** After each batch of changes is settled (progress). */
  onPage?: (p: PageDone) => void;
  /** Pauses before each repeated re-read or lookup (the platform's queries may lag). Default 250, 1000, 2000 ms. */
  rereadDelaysMs?: readonly number[];
}

export interface PushResult {
  runId: number;
  list: string;
  applied: number;
  created: number;
  /** Items deleted on the platform (or found already gone). */
  deleted: number;
  /** Creates withdrawn because their local row was deleted (and the item deleted if it had been created). */
  withdrawn: number;
  conflicts: number;
  failed: number;
  /** Changes left pending with an error (retried later). */
  retrying: number;
  /** Items written whose new version the mirror could not read back yet (the next push or pull brings it). */
  behind: number;
  /** The push stopped starting changes after this many failed in a row (0: it did not). */
  stoppedAfterFailures: number;
  /** Stopped by shutdown before every due change was sent; the rest stay pending. */
  stopped: boolean;
  counters: RunCounters;
}

type Outcome =
  | { kind: 'applied'; id: string; version: number | null }
  | { kind: 'created'; id: string }
  | { kind: 'deleted' }
  | { kind: 'withdrawn' }
  | { kind: 'conflict'; id: string; reread: boolean; version: number | null }
  | { kind: 'retry'; error: string }
  | { kind: 'failed'; error: string };

const BATCH = 1000;
/** Changes failing in a row (each after the client's retries) that stop a push: the platform is down, not the change. */
export const MAX_CONSECUTIVE_FAILURES = 10;

export async function pushList(deps: PushDeps, list: ListConfig): Promise<PushResult> {
  return runJob(
    deps,
    {
      list: list.name,
      job: 'push',
      lockName: listLockName(list.name),
      waitMs: deps.waitMs ?? 0,
      holderJobs: LIST_JOBS,
      recordSkipped: true,
    },
    (run) => pushLocked(deps, list, run),
  );
}

export async function loadMappingOrExplain(db: Knex, config: Config, list: ListConfig): Promise<TableMapping> {
  const mapping = await loadTableMapping(db, config.database.schema, list.name);
  if (!mapping) throw new UsageError(`List "${list.name}" has no mirror table yet: run "listsync pull --list ${list.name}" first.`);
  return mapping;
}

/** The delete trigger follows `lists[].pushDeletes` (a pull sets it too; this covers a config changed since). */
export async function syncDeleteCapture(db: Knex, mapping: TableMapping, list: ListConfig): Promise<void> {
  await db.transaction((trx) =>
    attachCaptureTriggers(trx, {
      schema: mapping.schema,
      table: mapping.table,
      listName: list.name,
      columns: mapping.columns,
      removedColumns: mapping.removedColumns,
      versionField: mapping.versionField,
      pushDeletes: list.pushDeletes,
    }),
  );
}

async function pushLocked(deps: PushDeps, list: ListConfig, run: ActiveRun): Promise<PushResult> {
  const { db, client } = deps;
  const { runId, log } = run;
  const mapping = await loadMappingOrExplain(db, deps.config, list);
  await syncDeleteCapture(db, mapping, list);
  const before = run.statsAtStart;
  const result: PushResult = {
    runId,
    list: list.name,
    applied: 0,
    created: 0,
    deleted: 0,
    withdrawn: 0,
    conflicts: 0,
    failed: 0,
    retrying: 0,
    behind: 0,
    stoppedAfterFailures: 0,
    stopped: false,
    counters: zeroCounters(),
  };
  const now = deps.clock?.() ?? new Date();
  const counters = (): Partial<RunCounters> => {
    const after = client.stats();
    return {
      requests: after.requests - before.requests,
      retries: after.retries - before.retries,
      changes_applied: result.applied + result.created + result.deleted + result.withdrawn,
      changes_conflicted: result.conflicts,
      changes_failed: result.failed,
    };
  };

  const settle = { db, client, logger: log, zone: deps.config.platform.timeZone, rereadDelaysMs: deps.rereadDelaysMs };
  try {
    // Writes of an earlier run that were never re-read come first.
    result.failed += (await settleMirror(settle, list, mapping)).notTaken.length;
    const rows = await outbox.dueChanges(db, list.name, now);
    log.info({ changes: rows.length }, 'push started');
    const failures = failureStreak();
    // The shutdown signal is checked between changes, not passed down: a change in flight is sent and settled.
    const stopping = (): boolean => deps.signal?.aborted === true || failures.tooMany();
    let handled = 0;
    for (let i = 0; i < rows.length && !stopping(); i += BATCH) {
      const batch = rows.slice(i, i + BATCH);
      const outcomes = await mapConcurrent(
        batch,
        Math.max(2, deps.config.platform.maxInFlight * 2),
        async (row) => failures.count(await pushOne(deps, list, mapping, row)),
        stopping,
      );
      handled += outcomes.length;
      deps.onPage?.({
        list: list.name,
        runId,
        page: i / BATCH + 1,
        pageCount: Math.ceil(rows.length / BATCH),
        totalCount: rows.length,
        items: outcomes.length,
        itemsSoFar: handled,
      });
      tally(result, outcomes);
      const settled = await settleMirror(settle, list, mapping);
      result.behind = settled.behind.length;
      // Written, but the platform kept its own value: not applied.
      result.failed += settled.notTaken.length;
      result.applied = Math.max(0, result.applied - settled.notTaken.length);
    }
    await outbox.pruneApplied(db, list.name, list.appliedRetentionDays);
    result.counters = { ...result.counters, ...counters() };
    if (failures.tooMany()) return await gaveUp(db, result, log, failures.streak);
    if (handled < rows.length) return await stopped(db, result, log);
    await finishRun(db, runId, 'succeeded', {
      counters: result.counters,
      details: runDetails(result),
    });
    log.info(
      {
        applied: result.applied,
        created: result.created,
        deleted: result.deleted,
        withdrawn: result.withdrawn,
        conflicts: result.conflicts,
        failed: result.failed,
        retrying: result.retrying,
        behind: result.behind,
      },
      'push finished',
    );
    return result;
  } catch (err) {
    await finishRun(db, runId, 'failed', { error: coerceError(err).message, counters: counters() }).catch(() => undefined); // a database that is gone: runJob reports the original error
    log.error({ err }, 'push failed; unsent changes stay pending');
    throw err;
  }
}

/** What a push's run row keeps beside its counters. */
function runDetails(result: PushResult): Record<string, number> {
  return {
    created: result.created,
    deleted: result.deleted,
    withdrawn: result.withdrawn,
    retrying: result.retrying,
    behind: result.behind,
  };
}

/** A push stopped by shutdown: what was sent is settled, the rest stays pending; the run is closed as stopped. */
async function stopped(db: Knex, result: PushResult, log: Logger): Promise<PushResult> {
  result.stopped = true;
  await finishRun(db, result.runId, 'failed', {
    error: 'stopped by shutdown; unsent changes stay pending',
    counters: result.counters,
    details: runDetails(result),
  });
  log.warn(
    { applied: result.applied, created: result.created, deleted: result.deleted, conflicts: result.conflicts, failed: result.failed },
    'push stopped by shutdown after the changes in flight; unsent changes stay pending',
  );
  return result;
}

/** Changes failing in a row: the push stops starting new ones at MAX_CONSECUTIVE_FAILURES. */
function failureStreak(): { count(o: Outcome): Outcome; tooMany(): boolean; streak: number } {
  const s = {
    streak: 0,
    count(o: Outcome): Outcome {
      s.streak = o.kind === 'retry' || o.kind === 'failed' ? s.streak + 1 : 0;
      return o;
    },
    tooMany: (): boolean => s.streak >= MAX_CONSECUTIVE_FAILURES,
  };
  return s;
}

/** A push that stopped after changes kept failing in a row: the rest stay pending; the run failed. */
async function gaveUp(db: Knex, result: PushResult, log: Logger, streak: number): Promise<PushResult> {
  result.stoppedAfterFailures = streak;
  const error = `stopped after ${streak} changes in a row failed (is the platform down?); the rest stay pending for the next push`;
  await finishRun(db, result.runId, 'failed', { error, counters: result.counters, details: runDetails(result) });
  log.error({ applied: result.applied, retrying: result.retrying, failed: result.failed }, error);
  return result;
}

/** Counts the outcomes into the result. */
function tally(result: PushResult, outcomes: readonly Outcome[]): void {
  for (const o of outcomes) {
    switch (o.kind) {
      case 'applied':
        result.applied++;
        break;
      case 'created':
        result.created++;
        break;
      case 'deleted':
        result.deleted++;
        break;
      case 'withdrawn':
        result.withdrawn++;
        break;
      case 'conflict':
        result.conflicts++;
        break;
      case 'failed':
        result.failed++;
        break;
      case 'retry':
        result.retrying++;
        break;
    }
  }
}

/**
 * Column values of a change -> the platform's field strings. `held`: the item
 * as the mirror last read it (`_raw`), whose multi-value arrays give the form
 * of their elements (src/mirror/multi-value.ts).
 */
export function toWire(
  mapping: TableMapping,
  changes: Record<string, unknown>,
  zone: string,
  held?: Record<string, unknown> | null,
  exactJson: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [column, value] of Object.entries(changes)) {
    const col = mapping.byColumn(column);
    if (!col) throw new Error(`column ${column} is not a field column of ${mapping.schema}.${mapping.table}`);
    if (col.removed) throw new Error(`field ${col.field} (column ${column}) is no longer on the platform`);
    try {
      const exact = col.kind === 'jsonb' && typeof value === 'object' && value !== null ? exactJson[column] : undefined;
      const wire = exact !== undefined ? compactJson(exact) : toPlatform(col.kind, value, zone);
      data[col.field] = col.kind === 'text[]' && wire !== '' ? multiValueWire(JSON.parse(wire) as string[], held?.[col.field]) : wire;
    } catch (err) {
      throw new Error(`column ${column}: ${coerceError(err).message}`, { cause: err });
    }
  }
  return data;
}

/**
 * One change. A platform failure of this change (after the client's retries)
 * leaves it pending with its error and backoff, and the push goes on. What
 * stops the push (a refused key, a lost database) puts it back to pending with
 * the error, its attempt counted, and is thrown.
 */
async function pushOne(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow): Promise<Outcome> {
  try {
    if (row.op === 'create')
      return row.withdrawn_at ? await withdrawCreate(deps, list, mapping, row) : await pushCreate(deps, list, mapping, row);
    if (row.op === 'delete') return await pushDelete(deps, list, mapping, row);
    return await pushUpdate(deps, list, mapping, row);
  } catch (err) {
    if (err instanceof PlatformError && !(err instanceof AuthError)) {
      await noteFieldRefusal(deps.db, list, mapping, err);
      return fail(deps.db, row, `${describeOp(row)} failed: ${err.message}`, false, list.maxPushAttempts);
    }
    await interrupted(deps.db, row, err).catch(() => undefined);
    throw err;
  }
}

const describeOp = (row: OutboxRow): string =>
  row.op === 'create'
    ? `create of ${row.local_id ?? 'a new row'}`
    : `${row.op === 'delete' ? 'delete' : 'update'} of item ${row.item_id ?? '?'}`;

async function pushUpdate(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow): Promise<Outcome> {
  const { db, client } = deps;
  const itemId = row.item_id!;
  const held = await heldItem(db, mapping, itemId);
  if (row.status === 'sending' && row.sent_changes) {
    // A push stopped with this write in flight: the platform is asked what became of it before anything is sent again.
    const earlier = await settleEarlierWrite(deps, list, mapping, row, held);
    if (earlier) return earlier;
    row = { ...row, sent_changes: null };
  }
  const { sendable, removed } = splitRemoved(mapping, row.changes);
  if (Object.keys(sendable).length === 0) return fail(db, row, removedFieldsError(mapping, removed), true, list.maxPushAttempts);
  const sent = sendable;
  const data = wireOrFail(deps, mapping, sent, held, await exactJsonOf(db, mapping, row, 'changes'));
  if (!data.ok) return fail(db, row, data.error, true, list.maxPushAttempts);

  const known = await knownBase(deps, list, mapping, row, held);
  if (known.kind !== 'base') return known.outcome;
  const base = known.base;
  const write = { mapping, id: itemId, data: data.value, removed };
  // A write whose answer was lost (a timeout) is read back before it is sent again, and sent at most twice.
  for (let sends = 1; ; sends++) {
    await markSending(db, row, sent);
    try {
      await client.updateItem(list.appID, list.listID, itemId, base, data.value);
      const version = base === 0 ? null : base + 1;
      await settleApplied(db, row, sent, version, { ...write, version });
      return { kind: 'applied', id: itemId, version };
    } catch (err) {
      if (err instanceof AuthError) throw err;
      if (!(err instanceof PlatformError)) return fail(db, row, coerceError(err).message, false, list.maxPushAttempts);
      // Any rejection: look at the item's current version before deciding.
      const remote = await readItem(deps, list, itemId);
      if (remote.kind === 'error')
        return fail(
          db,
          row,
          `${coerceError(err).message}; and the item could not be re-read: ${remote.error}`,
          false,
          list.maxPushAttempts,
        );
      if (remote.kind === 'gone') return fail(db, row, goneMessage(itemId), true, list.maxPushAttempts);
      const remoteVersion = Number(remote.item[list.versionField]);
      if (err.maybeApplied && remoteVersion === base + 1 && isOurWrite(remote.item, held, data.value, writableFields(mapping))) {
        // Our own attempt was applied; the answer was lost, or a retry saw its echo.
        await settleApplied(db, row, sent, remoteVersion, { ...write, version: remoteVersion });
        return { kind: 'applied', id: itemId, version: remoteVersion };
      }
      if (base === 0 || remoteVersion === base) {
        if (err.maybeApplied && sends < 2) continue; // not applied: sent once more
        await noteFieldRefusal(db, list, mapping, err);
        return fail(db, row, coerceError(err).message, false, list.maxPushAttempts);
      }
      return conflict(deps, list, mapping, row, remote.item, remoteVersion, held);
    }
  }
}

/** The exact JSON text of the change's jsonb columns (numbers as PostgreSQL holds them). */
function exactJsonOf(db: Knex, mapping: TableMapping, row: OutboxRow, which: 'changes' | 'sent_changes'): Promise<Record<string, string>> {
  const columns = mapping.columns.filter((c) => c.kind === 'jsonb').map((c) => c.column);
  return outbox.exactJsonValues(db, row.id, columns, which);
}

/** JSON text as JSON.stringify writes it (no spaces), every number as written. */
function compactJson(text: string): string {
  return stringifyLossless(parseLossless(text)) ?? text;
}

/** The fields a write can change (read-only ones, ModifiedBy among them, move by themselves). */
const writableFields = (mapping: TableMapping): string[] => mapping.columns.filter((c) => !c.readOnly).map((c) => c.field);

/** The item as the mirror last read it (`_raw`), or null. */
async function heldItem(db: Knex, mapping: TableMapping, id: string): Promise<Item | null> {
  const r = (await db.withSchema(mapping.schema).from(mapping.table).where({ id }).first('_raw')) as { _raw: Item | null } | undefined;
  return r?._raw ?? null;
}

/**
 * A write a stopped push left in flight (`sent_changes`): applied when the item
 * is at base + 1 carrying what was sent (the edits made since stay pending
 * against it); not applied when it is still at the base (undefined: the whole
 * change is sent); otherwise the platform moved on, a conflict holding every
 * edit made since the base.
 */
async function settleEarlierWrite(
  deps: PushDeps,
  list: ListConfig,
  mapping: TableMapping,
  row: OutboxRow,
  held: Item | null,
): Promise<Outcome | undefined> {
  const { db } = deps;
  if (row.base_version === null || Number(row.base_version) <= 0) return undefined;
  const base = Number(row.base_version);
  const { sendable, removed } = splitRemoved(mapping, row.sent_changes ?? {});
  const data = wireOrFail(deps, mapping, sendable, held, await exactJsonOf(db, mapping, row, 'sent_changes'));
  if (!data.ok) return undefined;
  const itemId = row.item_id!;
  const remote = await readItem(deps, list, itemId);
  if (remote.kind === 'error') return fail(db, row, `the item could not be read: ${remote.error}`, false, list.maxPushAttempts);
  if (remote.kind === 'gone') return fail(db, row, goneMessage(itemId), true, list.maxPushAttempts);
  const remoteVersion = Number(remote.item[list.versionField]);
  if (remoteVersion === base) return undefined;
  if (remoteVersion === base + 1 && isOurWrite(remote.item, held, data.value, writableFields(mapping))) {
    await settleApplied(db, row, sendable, remoteVersion, { mapping, id: itemId, data: data.value, removed, version: remoteVersion });
    return { kind: 'applied', id: itemId, version: remoteVersion };
  }
  return conflict(deps, list, mapping, row, remote.item, remoteVersion, held);
}

/** An edit's columns split into those of fields the platform still has and those of removed fields. */
function splitRemoved(
  mapping: TableMapping,
  changes: Record<string, unknown>,
): { sendable: Record<string, unknown>; removed: Record<string, unknown> } {
  const sendable: Record<string, unknown> = {};
  const removed: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(changes)) {
    if (mapping.byColumn(column)?.removed) removed[column] = value;
    else sendable[column] = value;
  }
  return { sendable, removed };
}

function removedFieldsError(mapping: TableMapping, removed: Record<string, unknown>): string {
  const names = Object.keys(removed).map((c) => `${c} (field ${mapping.byColumn(c)?.field ?? '?'})`);
  return `not sent: ${names.join(', ')} ${names.length === 1 ? 'belongs to a field that was' : 'belong to fields that were'} removed from the platform; the rest of the change, if any, was applied`;
}

type KnownBase = { kind: 'base'; base: number } | { kind: 'settled'; outcome: Outcome };

/**
 * The version the change was made on. Unknown (NULL or a refill marker, from
 * a capture made before the mirror knew the item's version): the item is read
 * and its version is the base only when it still holds what the mirror last
 * saw of it (`_raw`); otherwise it is a conflict. Never RowVersion 0 by default.
 */
async function knownBase(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow, held: Item | null): Promise<KnownBase> {
  if (row.base_version !== null && Number(row.base_version) >= 0) return { kind: 'base', base: Number(row.base_version) };
  const itemId = row.item_id!;
  const remote = await readItem(deps, list, itemId);
  if (remote.kind === 'error')
    return {
      kind: 'settled',
      outcome: await fail(deps.db, row, `the item could not be read: ${remote.error}`, false, list.maxPushAttempts),
    };
  if (remote.kind === 'gone')
    return { kind: 'settled', outcome: await fail(deps.db, row, goneMessage(itemId), true, list.maxPushAttempts) };
  const remoteVersion = Number(remote.item[list.versionField]);
  if (await unchangedSinceSeen(deps.db, mapping, itemId, remote.item)) return { kind: 'base', base: remoteVersion };
  return { kind: 'settled', outcome: await conflict(deps, list, mapping, row, remote.item, remoteVersion, held) };
}

/** The platform's item still holds, field for field, what the mirror last saw of it (`_raw`). */
async function unchangedSinceSeen(db: Knex, mapping: TableMapping, id: string, remote: Item): Promise<boolean> {
  const row = (await db.withSchema(mapping.schema).from(mapping.table).where({ id }).first('_raw')) as { _raw: Item | null } | undefined;
  const seen = row?._raw;
  return Boolean(seen) && mapping.columns.every((c) => sameValue(seen![c.field], remote[c.field]));
}

const sameValue = (a: unknown, b: unknown): boolean => (a ?? '') === (b ?? '') || String(a ?? '') === String(b ?? '');

const goneMessage = (itemId: string): string =>
  `item ${itemId} no longer exists on the platform (deleted there?); the change cannot be applied`;

async function pushDelete(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow): Promise<Outcome> {
  const { db } = deps;
  const itemId = row.item_id!;
  const base = Number(row.base_version ?? 0);
  await markSending(db, row, row.changes);
  const remote = await readItem(deps, list, itemId);
  if (remote.kind === 'error')
    return fail(db, row, `the item could not be read before deleting it: ${remote.error}`, false, list.maxPushAttempts);
  if (remote.kind === 'gone') {
    await settleApplied(db, row, row.changes, null);
    return { kind: 'deleted' };
  }
  const remoteVersion = Number(remote.item[list.versionField]);
  // A base that is unknown (NULL) is never an overwrite: the item must still hold what the mirror last saw.
  const unknownBase = row.base_version === null || base < 0;
  if (unknownBase ? !(await unchangedSinceSeen(db, mapping, itemId, remote.item)) : base !== 0 && remoteVersion !== base)
    return deleteConflict(deps, list, mapping, row, remote.item, remoteVersion);
  await deleteOnPlatform(deps, list, itemId);
  await settleApplied(db, row, row.changes, null);
  return { kind: 'deleted' };
}

/** Deletes an item; one already gone (asked both ways) counts as deleted. */
async function deleteOnPlatform(deps: PushDeps, list: ListConfig, itemId: string): Promise<void> {
  try {
    await deps.client.deleteItem(list.appID, list.listID, itemId);
  } catch (err) {
    if (!isRefusalAnswer(err)) throw err;
    const now = await readItemOrGone(deps.client, itemRef(list), itemId);
    if (now.kind !== 'gone') throw err;
  }
}

const itemRef = (list: ListConfig): ItemListRef => ({ appID: list.appID, listID: list.listID, idField: list.idField });

async function deleteConflict(
  deps: PushDeps,
  list: ListConfig,
  mapping: TableMapping,
  row: OutboxRow,
  remote: Item,
  remoteVersion: number,
): Promise<Outcome> {
  const { db } = deps;
  const itemId = row.item_id!;
  if (list.conflictPolicy === 'local-wins') {
    await deleteOnPlatform(deps, list, itemId);
    await db.transaction(async (trx) => {
      await recordConflict(trx, list, row, row.changes, remote, remoteVersion, 'resolved', 'local-wins', mapping);
      await settleApplied(trx, row, row.changes, null);
    });
    return { kind: 'conflict', id: itemId, reread: false, version: null };
  }
  if (list.conflictPolicy === 'remote-wins') {
    // The platform's newer version wins: the row comes back as it is there; the deleted content stays with the conflict.
    await db.transaction(async (trx) => {
      await recordConflict(trx, list, row, row.changes, remote, remoteVersion, 'resolved', 'remote-wins', mapping);
      await outbox.supersede(
        trx,
        row.id,
        "conflict: the item changed on the platform since the row was deleted; the platform's version was kept (remote-wins)",
      );
      await upsertItems(trx, mapping, [remote], deps.config.platform.timeZone);
    });
    return { kind: 'conflict', id: itemId, reread: false, version: null };
  }
  await holdConflict(db, list, mapping, row, row.changes, remote, remoteVersion);
  return { kind: 'conflict', id: itemId, reread: false, version: null };
}

async function pushCreate(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow): Promise<Outcome> {
  const { db, client } = deps;
  const sent = row.sent_changes ?? row.changes;
  const data = wireOrFail(deps, mapping, sent, null, await exactJsonOf(db, mapping, row, row.sent_changes ? 'sent_changes' : 'changes'));
  if (!data.ok) return fail(db, row, data.error, true, list.maxPushAttempts);

  // Sent before without a confirmed answer (a stopped push, an interrupted one): look before sending again.
  let resends = 1;
  if (row.sends > 0 && row.attempted_at) {
    const search = await searchLostCreate(deps, list, mapping, data.value, row.attempted_at);
    const settled = await settleSearch(deps, list, mapping, row, sent, search, 'an earlier attempt');
    if (settled) return settled;
    resends = 0; // this send is the one resend
  }
  for (;;) {
    const attemptedAt = await markSending(db, row, sent, { create: true });
    try {
      const id = await client.createItem(list.appID, list.listID, data.value);
      return await settleCreated(deps, list, mapping, row, sent, id);
    } catch (err) {
      if (err instanceof AuthError) throw err;
      if (!(err instanceof PlatformError && err.maybeApplied)) return fail(db, row, coerceError(err).message, false, list.maxPushAttempts);
      const search = await searchLostCreate(deps, list, mapping, data.value, row.attempted_at ?? attemptedAt);
      const settled = await settleSearch(deps, list, mapping, row, sent, search, `a create whose answer was lost (${err.message})`);
      if (settled) return settled;
      if (resends-- <= 0) {
        return fail(
          db,
          row,
          `the create's answer was lost again (${err.message}) and the item is not found on the platform; not sent a third time. Check the platform, then "listsync push --retry-failed".`,
          true,
          list.maxPushAttempts,
        );
      }
      row = { ...row, attempted_at: row.attempted_at ?? attemptedAt, sends: row.sends + 1 };
    }
  }
}

/** A lost create found (adopted), ambiguous (failed) or not found (undefined: the caller sends it). */
async function settleSearch(
  deps: PushDeps,
  list: ListConfig,
  mapping: TableMapping,
  row: OutboxRow,
  sent: Record<string, unknown>,
  search: LostCreateSearch,
  what: string,
): Promise<Outcome | undefined> {
  if (search.kind === 'found') {
    deps.logger.info(
      { list: list.name, outbox: row.id, item: search.id },
      'a create whose answer was lost was found on the platform; the local row takes its ID',
    );
    return settleCreated(deps, list, mapping, row, sent, search.id);
  }
  if (search.kind === 'ambiguous') {
    return fail(
      deps.db,
      row,
      `${what} may have created the item: ${search.ids.length} items created since carry the values sent (${search.ids.join(', ')}); not sent again. Keep the right one: delete the local row ${row.local_id ?? ''} and let the next pull bring it, or delete the extra items on the platform and "listsync push --retry-failed".`,
      true,
      list.maxPushAttempts,
    );
  }
  return undefined;
}

/** The lost create's search, repeated with backoff while nothing is found (the platform's queries may lag). */
async function searchLostCreate(
  deps: PushDeps,
  list: ListConfig,
  mapping: TableMapping,
  data: Record<string, string>,
  since: Date,
): Promise<LostCreateSearch> {
  const lookup = { db: deps.db, client: deps.client, zone: deps.config.platform.timeZone };
  let search = await findCreated(lookup, list, mapping, data, since);
  for (const delay of deps.rereadDelaysMs ?? DEFAULT_REREAD_DELAYS_MS) {
    if (search.kind !== 'none') break;
    await sleep(delay);
    search = await findCreated(lookup, list, mapping, data, since);
  }
  return search;
}

/** A create whose local row was deleted: nothing is left behind, on the platform either. */
async function withdrawCreate(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow): Promise<Outcome> {
  const { db } = deps;
  const sent = row.sent_changes ?? row.changes;
  const data = wireOrFail(deps, mapping, sent);
  let note = 'withdrawn: the local row was deleted; the item was never created on the platform';
  if (row.sends > 0 && row.attempted_at && data.ok) {
    const search = await searchLostCreate(deps, list, mapping, data.value, row.attempted_at);
    if (search.kind === 'ambiguous') {
      return fail(
        db,
        row,
        `withdrawn, but ${search.ids.length} items created since carry the values sent (${search.ids.join(', ')}); none was deleted. Delete the one this row created on the platform.`,
        true,
        list.maxPushAttempts,
      );
    }
    if (search.kind === 'found') {
      await deleteOnPlatform(deps, list, search.id);
      note = `withdrawn: the local row was deleted; item ${search.id}, created by an attempt whose answer was lost, was deleted on the platform`;
    }
  }
  await outbox.supersede(db, row.id, note);
  return { kind: 'withdrawn' };
}

type Remote = { kind: 'found'; item: Item } | { kind: 'gone' } | { kind: 'error'; error: string };

/** One item by ID (GET shows writes at once); gone when asked both ways. A refused key ends the push. */
async function readItem(deps: PushDeps, list: ListConfig, id: string): Promise<Remote> {
  try {
    const now = await readItemOrGone(deps.client, itemRef(list), id);
    return now.kind === 'present' ? { kind: 'found', item: now.item } : { kind: 'gone' };
  } catch (err) {
    if (err instanceof AuthError) throw err;
    return { kind: 'error', error: coerceError(err).message };
  }
}

function wireOrFail(
  deps: PushDeps,
  mapping: TableMapping,
  changes: Record<string, unknown>,
  held?: Record<string, unknown> | null,
  exactJson?: Readonly<Record<string, string>>,
): { ok: true; value: Record<string, string> } | { ok: false; error: string } {
  try {
    return { ok: true, value: toWire(mapping, changes, deps.config.platform.timeZone, held, exactJson) };
  } catch (err) {
    return { ok: false, error: `cannot convert the change for the platform: ${coerceError(err).message}` };
  }
}

/** Marks the change as being sent (a create also counts the send and keeps its first attempt's time); returns now. */
async function markSending(db: Knex, row: OutboxRow, sent: Record<string, unknown>, options: { create?: boolean } = {}): Promise<Date> {
  const now = new Date();
  await outbox.markSending(db, row.id, sent, now, options);
  return now;
}

/** What an applied edit wrote: kept in the mirror row with the change's settlement. */
interface AppliedWrite {
  mapping: TableMapping;
  id: string;
  /** The version the write produced (null: unknown, e.g. after an overwrite with RowVersion 0). */
  version: number | null;
  data: Record<string, string>;
  /** Columns of removed fields the edit also named: kept, marked failed. */
  removed?: Record<string, unknown>;
}

/**
 * The sent part is applied, in one transaction with what the mirror row learns
 * from the write. Edits made while it was in flight (the remainder) stay
 * pending against the new version; a part naming removed fields is kept, failed.
 */
async function settleApplied(
  db: Knex | Knex.Transaction,
  row: OutboxRow,
  sent: Record<string, unknown>,
  newVersion: number | null,
  write?: AppliedWrite,
): Promise<void> {
  if (row.op === 'delete') return outbox.markApplied(db, row.id);
  const settle = async (trx: Knex.Transaction): Promise<void> => {
    await outbox.settleSentEdit(trx, row.id, sent, newVersion);
    if (write && write.version !== null) await recordWrite(trx, write.mapping, { id: write.id, version: write.version, data: write.data });
    if (write?.removed && Object.keys(write.removed).length)
      await outbox.keepUnsendable(trx, row.id, write.removed, removedFieldsError(write.mapping, write.removed));
  };
  await (db.isTransaction ? settle(db as Knex.Transaction) : db.transaction(settle));
}

/**
 * The item exists on the platform with `id`: the local row takes it (or, when
 * a pull already brought the item in, gives way to it). A create withdrawn
 * meanwhile (its row deleted while the create was in flight) deletes the item.
 */
async function settleCreated(
  deps: PushDeps,
  list: ListConfig,
  mapping: TableMapping,
  row: OutboxRow,
  sent: Record<string, unknown>,
  id: string,
  version = FIRST_VERSION,
): Promise<Outcome> {
  const data = wireOrFail(deps, mapping, sent);
  const withdrawn = await deps.db.transaction(async (trx) => {
    if (await outbox.lockWithdrawn(trx, row.id)) return true;
    await markListsyncWriter(trx);
    const table = `${mapping.schema}.${mapping.table}`;
    const taken = (await trx.raw('select 1 from ?? where id = ?', [table, id])) as { rows: unknown[] };
    if (taken.rows.length > 0) await trx.raw('delete from ?? where id = ?', [table, row.local_id]);
    else await trx.raw('update ?? set id = ? where id = ?', [table, id, row.local_id]);
    // Edits made to the row while it was being created stay pending as an update of the new item.
    await outbox.settleSentCreate(trx, row.id, sent, id, version);
    await recordWrite(trx, mapping, { id, version, data: data.ok ? data.value : {} });
    return false;
  });
  if (!withdrawn) return { kind: 'created', id };
  await deleteOnPlatform(deps, list, id);
  await outbox.supersede(
    deps.db,
    row.id,
    `withdrawn: the local row was deleted while it was being created; item ${id} was deleted on the platform`,
  );
  return { kind: 'withdrawn' };
}

/** The version of an item just created (the platform counts versions from 1; a later write is checked against it). */
const FIRST_VERSION = 1;

/** Records an error: pending with backoff (retryable) or failed (final, or out of attempts). */
async function fail(db: Knex, row: OutboxRow, error: string, final: boolean, maxAttempts: number): Promise<Outcome> {
  const attempts = row.attempts + 1;
  const failed = final || attempts >= maxAttempts;
  await outbox.recordFailure(db, row.id, { attempts, failed, error, retryInSeconds: backoffSeconds(attempts) });
  return failed ? { kind: 'failed', error } : { kind: 'retry', error };
}

const backoffSeconds = (attempts: number): number => Math.min(30 * 2 ** (attempts - 1), 1800);

/** A change stopped by an error that ends the push: pending again, with the error and the attempt counted (no backoff: the cause is outside the change). */
async function interrupted(db: Knex, row: OutboxRow, err: unknown): Promise<void> {
  await outbox.markInterrupted(db, row.id, row.attempts + 1, `interrupted: ${coerceError(err).message}`);
}

/**
 * The platform moved past the change's base. What the conflict holds (and
 * local-wins sends) is every edit made since that base: the change as it is
 * now in the outbox, with edits merged in while a write was in flight, never
 * only the part an interrupted write already delivered.
 */
async function conflict(
  deps: PushDeps,
  list: ListConfig,
  mapping: TableMapping,
  row: OutboxRow,
  remote: Item,
  remoteVersion: number,
  held: Item | null,
): Promise<Outcome> {
  const { db, client } = deps;
  const itemId = row.item_id!;
  const policy = list.conflictPolicy;
  const latest = { ...row, changes: (await outbox.changesOf(db, row.id)) ?? row.changes };
  const local = splitRemoved(mapping, latest.changes).sendable;
  if (policy === 'local-wins') {
    const data = wireOrFail(deps, mapping, local, held, await exactJsonOf(db, mapping, row, 'changes'));
    if (!data.ok) return fail(db, row, data.error, true, list.maxPushAttempts);
    await outbox.markSending(db, row.id, local, new Date());
    await client.updateItem(list.appID, list.listID, itemId, 0, data.value);
    await db.transaction(async (trx) => {
      await recordConflict(trx, list, latest, local, remote, remoteVersion, 'resolved', 'local-wins', mapping);
      await settleApplied(trx, latest, local, remoteVersion + 1);
    });
    return { kind: 'conflict', id: itemId, reread: true, version: remoteVersion + 1 };
  }
  if (policy === 'remote-wins') {
    await db.transaction(async (trx) => {
      await recordConflict(trx, list, latest, local, remote, remoteVersion, 'resolved', 'remote-wins', mapping);
      await outbox.supersede(
        trx,
        row.id,
        "conflict: the platform's newer version won (remote-wins); the local edit is kept in the conflict",
      );
      await upsertItems(trx, mapping, [remote], deps.config.platform.timeZone);
    });
    return { kind: 'conflict', id: itemId, reread: false, version: null };
  }
  await holdConflict(db, list, mapping, latest, local, remote, remoteVersion);
  return { kind: 'conflict', id: itemId, reread: false, version: null };
}

/** conflictPolicy manual: the change waits for `listsync conflicts resolve`. */
async function holdConflict(
  db: Knex,
  list: ListConfig,
  mapping: TableMapping,
  row: OutboxRow,
  local: Record<string, unknown>,
  remote: Item,
  remoteVersion: number,
): Promise<void> {
  await db.transaction(async (trx) => {
    await recordConflict(trx, list, row, local, remote, remoteVersion, 'open', null, mapping);
    const what = row.op === 'delete' ? 'the row was deleted on' : 'the change was made on';
    await outbox.holdAsConflict(
      trx,
      row.id,
      `conflict: the platform is at version ${remoteVersion}, ${what} ${row.base_version}; settle it with "listsync conflicts resolve"`,
      { clearSent: true },
    );
  });
}

/** Re-reads items by ID (In, 1000 per request) and writes them to the mirror. */
export async function rereadItems(
  deps: Pick<PushDeps, 'db' | 'client' | 'config'>,
  list: ListConfig,
  mapping: TableMapping,
  ids: readonly string[],
): Promise<UpsertResult> {
  const items = await queryItemsByIds(deps.client, itemRef(list), ids);
  return deps.db.transaction((trx) => upsertItems(trx, mapping, items, deps.config.platform.timeZone));
}

/**
 * Runs `fn` over the items, `limit` at a time. The first error stops new work; the calls under way finish before it is thrown.
 * Once `stop()` says so no new item starts; the results of the items that ran are returned.
 */
async function mapConcurrent<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
  stop: () => boolean = () => false,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure && !stop() && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.error;
  return out.filter((_, i) => i < next);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
