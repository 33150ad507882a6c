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
 *   for on the platform first (src/sync/lost-creates.ts): found → adopted,
 *   not found → sent again, once; ambiguous → failed, naming the candidates.
 *   A withdrawn create (its local row was deleted) is looked for the same way
 *   and the item deleted if it was created after all.
 * - After each batch, the items written are re-read (one In query per 1000
 *   IDs); a re-read that does not show the version written (the platform's
 *   queries lag) is retried with backoff, then by GET; what is still behind
 *   is reported. Versions never go backwards in the mirror.
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
import type { PlatformClient } from '../platform/client.js';
import { AuthError, NotFoundError, PlatformError } from '../platform/errors.js';
import { Operator, type Item } from '../platform/types.js';
import { LIST_JOBS, listLockName } from './exclusive.js';
import { runJob, type ActiveRun, type JobDeps, type PageDone } from './run-job.js';
import { recordConflict } from './conflicts.js';
import { carries, findCreated, type LostCreateSearch } from './lost-creates.js';
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
  /** Items written whose new version the mirror could not read back yet (the next pull brings it). */
  behind: number;
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
const DEFAULT_REREAD_DELAYS_MS = [250, 1000, 2000] as const;
/** Items still behind after the repeated queries are read one by one (GET shows writes at once), up to this many a batch. */
const MAX_GET_REREADS = 200;

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

  try {
    const rows = await outbox.dueChanges(db, list.name, now);
    log.info({ changes: rows.length }, 'push started');
    // The shutdown signal is checked between changes, not passed down: a change in flight is sent and settled.
    const stopping = (): boolean => deps.signal?.aborted === true;
    let handled = 0;
    for (let i = 0; i < rows.length && !stopping(); i += BATCH) {
      const batch = rows.slice(i, i + BATCH);
      const outcomes = await mapConcurrent(
        batch,
        Math.max(2, deps.config.platform.maxInFlight * 2),
        (row) => pushOne(deps, list, mapping, row),
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
      const written = tally(result, outcomes);
      result.behind += (await rereadWritten(deps, list, mapping, written)).length;
      // Applied changes are done (the run's counters keep the tally); the outbox holds only what is open or needs a look.
      await outbox.deleteApplied(
        db,
        list.name,
        batch.map((r) => r.id),
      );
    }
    result.counters = { ...result.counters, ...counters() };
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

/** Counts the outcomes into the result; returns the items written, with the version each should now have (null: unknown). */
function tally(result: PushResult, outcomes: readonly Outcome[]): Map<string, number | null> {
  const written = new Map<string, number | null>();
  for (const o of outcomes) {
    switch (o.kind) {
      case 'applied':
        result.applied++;
        written.set(o.id, o.version);
        break;
      case 'created':
        result.created++;
        written.set(o.id, 1);
        break;
      case 'deleted':
        result.deleted++;
        break;
      case 'withdrawn':
        result.withdrawn++;
        break;
      case 'conflict':
        result.conflicts++;
        if (o.reread) written.set(o.id, o.version);
        break;
      case 'failed':
        result.failed++;
        break;
      case 'retry':
        result.retrying++;
        break;
    }
  }
  return written;
}

/** Column values of a change -> the platform's field strings. */
export function toWire(mapping: TableMapping, changes: Record<string, unknown>, zone: string): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [column, value] of Object.entries(changes)) {
    const col = mapping.byColumn(column);
    if (!col) throw new Error(`column ${column} is not a field column of ${mapping.schema}.${mapping.table}`);
    if (col.removed) throw new Error(`field ${col.field} (column ${column}) is no longer on the platform`);
    try {
      data[col.field] = toPlatform(col.kind, value, zone);
    } catch (err) {
      throw new Error(`column ${column}: ${coerceError(err).message}`, { cause: err });
    }
  }
  return data;
}

/** One change. Whatever interrupts it (a refused key, a lost database) puts it back to pending with the error, its attempt counted. */
async function pushOne(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow): Promise<Outcome> {
  try {
    if (row.op === 'create')
      return row.withdrawn_at ? await withdrawCreate(deps, list, mapping, row) : await pushCreate(deps, list, mapping, row);
    if (row.op === 'delete') return await pushDelete(deps, list, mapping, row);
    return await pushUpdate(deps, list, mapping, row);
  } catch (err) {
    await interrupted(deps.db, row, err).catch(() => undefined);
    throw err;
  }
}

async function pushUpdate(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow): Promise<Outcome> {
  const { db, client } = deps;
  const recovering = row.status === 'sending';
  const sent = recovering && row.sent_changes ? row.sent_changes : row.changes;
  const data = wireOrFail(deps, mapping, sent);
  if (!data.ok) return fail(db, row, data.error, true, list.maxPushAttempts);

  const itemId = row.item_id!;
  const base = Number(row.base_version ?? 0);
  await markSending(db, row, sent);
  try {
    await client.updateItem(list.appID, list.listID, itemId, base, data.value);
    await settleApplied(db, row, sent, base === 0 ? null : base + 1);
    return { kind: 'applied', id: itemId, version: base === 0 ? null : base + 1 };
  } catch (err) {
    if (err instanceof AuthError) throw err;
    if (!(err instanceof PlatformError) && !recovering) return fail(db, row, coerceError(err).message, false, list.maxPushAttempts);
    // Any rejection: look at the item's current version before deciding.
    const remote = await readItem(deps, list, itemId);
    if (remote.kind === 'error')
      return fail(db, row, `${coerceError(err).message}; and the item could not be re-read: ${remote.error}`, false, list.maxPushAttempts);
    if (remote.kind === 'gone')
      return fail(
        db,
        row,
        `item ${itemId} no longer exists on the platform (deleted there?); the change cannot be applied`,
        true,
        list.maxPushAttempts,
      );
    const remoteVersion = Number(remote.item[list.versionField]);
    if (base === 0 || remoteVersion === base) return fail(db, row, coerceError(err).message, false, list.maxPushAttempts);
    if (
      (recovering || (err instanceof PlatformError && err.maybeApplied)) &&
      remoteVersion === base + 1 &&
      carries(remote.item, data.value)
    ) {
      // Our own earlier attempt was applied; the retry saw its echo.
      await settleApplied(db, row, sent, remoteVersion);
      return { kind: 'applied', id: itemId, version: remoteVersion };
    }
    return conflict(deps, list, mapping, row, sent, data.value, remote.item, remoteVersion);
  }
}

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
  if (base !== 0 && remoteVersion !== base) return deleteConflict(deps, list, mapping, row, remote.item, remoteVersion);
  await deleteOnPlatform(deps, list, itemId);
  await settleApplied(db, row, row.changes, null);
  return { kind: 'deleted' };
}

/** Deletes an item; one already gone counts as deleted. */
async function deleteOnPlatform(deps: PushDeps, list: ListConfig, itemId: string): Promise<void> {
  try {
    await deps.client.deleteItem(list.appID, list.listID, itemId);
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
}

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
  const data = wireOrFail(deps, mapping, sent);
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

/** One item by ID (GET shows writes at once). A refused key ends the push. */
async function readItem(deps: PushDeps, list: ListConfig, id: string): Promise<Remote> {
  try {
    return { kind: 'found', item: await deps.client.getItem(list.appID, list.listID, id) };
  } catch (err) {
    if (err instanceof AuthError) throw err;
    if (err instanceof NotFoundError) return { kind: 'gone' };
    return { kind: 'error', error: coerceError(err).message };
  }
}

function wireOrFail(
  deps: PushDeps,
  mapping: TableMapping,
  changes: Record<string, unknown>,
): { ok: true; value: Record<string, string> } | { ok: false; error: string } {
  try {
    return { ok: true, value: toWire(mapping, changes, deps.config.platform.timeZone) };
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

/**
 * The sent part is applied. Edits made while it was in flight (the remainder)
 * stay pending against the new version.
 */
async function settleApplied(
  db: Knex | Knex.Transaction,
  row: OutboxRow,
  sent: Record<string, unknown>,
  newVersion: number | null,
): Promise<void> {
  if (row.op === 'delete') await outbox.markApplied(db, row.id);
  else await outbox.settleSentEdit(db, row.id, sent, newVersion);
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
): Promise<Outcome> {
  const withdrawn = await deps.db.transaction(async (trx) => {
    if (await outbox.lockWithdrawn(trx, row.id)) return true;
    await markListsyncWriter(trx);
    const table = `${mapping.schema}.${mapping.table}`;
    const taken = (await trx.raw('select 1 from ?? where id = ?', [table, id])) as { rows: unknown[] };
    if (taken.rows.length > 0) await trx.raw('delete from ?? where id = ?', [table, row.local_id]);
    else await trx.raw('update ?? set id = ? where id = ?', [table, id, row.local_id]);
    // Edits made to the row while it was being created stay pending as an update of the new item (version 1).
    await outbox.settleSentCreate(trx, row.id, sent, id);
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

async function conflict(
  deps: PushDeps,
  list: ListConfig,
  mapping: TableMapping,
  row: OutboxRow,
  sent: Record<string, unknown>,
  data: Record<string, string>,
  remote: Item,
  remoteVersion: number,
): Promise<Outcome> {
  const { db, client } = deps;
  const itemId = row.item_id!;
  const policy = list.conflictPolicy;
  if (policy === 'local-wins') {
    await client.updateItem(list.appID, list.listID, itemId, 0, data);
    await db.transaction(async (trx) => {
      await recordConflict(trx, list, row, sent, remote, remoteVersion, 'resolved', 'local-wins', mapping);
      await settleApplied(trx, row, sent, remoteVersion + 1);
    });
    return { kind: 'conflict', id: itemId, reread: true, version: remoteVersion + 1 };
  }
  if (policy === 'remote-wins') {
    await db.transaction(async (trx) => {
      await recordConflict(trx, list, row, sent, remote, remoteVersion, 'resolved', 'remote-wins', mapping);
      await outbox.supersede(trx, row.id, "conflict: the platform's newer version won (remote-wins)");
      await upsertItems(trx, mapping, [remote], deps.config.platform.timeZone);
    });
    return { kind: 'conflict', id: itemId, reread: false, version: null };
  }
  await holdConflict(db, list, mapping, row, sent, remote, remoteVersion);
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

/** Items by ID (In, 1000 per request), as the platform's queries show them now. */
async function queryByIds(client: PlatformClient, list: ListConfig, ids: readonly string[]): Promise<Item[]> {
  const out: Item[] = [];
  for (let i = 0; i < ids.length; i += 1000) {
    const chunk = ids.slice(i, i + 1000);
    const { items } = await client.queryItems(list.appID, list.listID, {
      Filters: [{ Field: list.idField, Type: Operator.In, Value: JSON.stringify(chunk) }],
      PageIndex: 1,
      PageSize: 1000,
    });
    out.push(...items);
  }
  return out;
}

/** Re-reads items by ID (In, 1000 per request) and writes them to the mirror. */
export async function rereadItems(
  deps: Pick<PushDeps, 'db' | 'client' | 'config'>,
  list: ListConfig,
  mapping: TableMapping,
  ids: readonly string[],
): Promise<UpsertResult[]> {
  const out: UpsertResult[] = [];
  for (let i = 0; i < ids.length; i += 1000) {
    const items = await queryByIds(deps.client, list, ids.slice(i, i + 1000));
    out.push(await deps.db.transaction((trx) => upsertItems(trx, mapping, items, deps.config.platform.timeZone)));
  }
  return out;
}

/**
 * Brings the written items' new versions into the mirror. Items the query does
 * not yet show at the version written are asked again with backoff, then read
 * one by one; returns the IDs still behind.
 */
async function rereadWritten(
  deps: PushDeps,
  list: ListConfig,
  mapping: TableMapping,
  written: ReadonlyMap<string, number | null>,
): Promise<string[]> {
  const zone = deps.config.platform.timeZone;
  const upToDate = (item: Item | undefined, id: string): boolean => {
    if (!item) return false;
    const want = written.get(id);
    return want === null || want === undefined || Number(item[list.versionField]) >= want;
  };
  const store = (items: Item[]) => deps.db.transaction((trx) => upsertItems(trx, mapping, items, zone));

  let behind = [...written.keys()];
  for (const delay of [0, ...(deps.rereadDelaysMs ?? DEFAULT_REREAD_DELAYS_MS)]) {
    if (behind.length === 0) return [];
    if (delay > 0) await sleep(delay);
    const items = await queryByIds(deps.client, list, behind);
    await store(items);
    const byId = new Map(items.map((i) => [String(i[list.idField]), i]));
    behind = behind.filter((id) => !upToDate(byId.get(id), id));
  }
  const stillBehind: string[] = behind.slice(MAX_GET_REREADS);
  for (const id of behind.slice(0, MAX_GET_REREADS)) {
    const remote = await readItem(deps, list, id);
    if (remote.kind === 'found') await store([remote.item]);
    if (remote.kind !== 'found' || !upToDate(remote.item, id)) stillBehind.push(id);
  }
  if (stillBehind.length)
    deps.logger.warn(
      { list: list.name, behind: stillBehind.length },
      "the platform's queries did not show the versions written yet; the next pull brings them",
    );
  return stillBehind;
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
