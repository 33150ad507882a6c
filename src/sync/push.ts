/**
 * Push: local changes captured in the outbox -> the platform, version-checked.
 *
 * - Updates: PATCH with RowVersion = the change's base version and only the
 *   changed fields, as platform strings. Creates: POST, then the mirror row
 *   takes the platform's ID.
 * - A rejected PATCH is checked against the item's current version: a moved
 *   version is a conflict (settled by the list's policy); anything else stays
 *   pending with its error and is retried by a later push with backoff, until
 *   maxPushAttempts marks it failed.
 * - A retried PATCH whose earlier attempt was applied shows up as a mismatch
 *   at exactly base + 1 with our values: that is recognised as applied, so a
 *   change is never applied twice.
 * - After each batch, the items written are re-read (one In query per 1000
 *   IDs) so the mirror holds the platform's new versions.
 * - While a change is being sent its row is 'sending' with a snapshot of what
 *   was sent; edits made meanwhile stay pending as the remainder. A process
 *   killed mid-send leaves 'sending' rows that the next push checks before
 *   sending again.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import { UsageError } from '../errors.js';
import type { Logger } from '../logger.js';
import { loadTableMapping, markListsyncWriter, toPlatform, upsertItems, type TableMapping, type UpsertResult } from '../mirror/index.js';
import type { PlatformClient } from '../platform/client.js';
import { AuthError, PlatformError } from '../platform/errors.js';
import { Operator, type Item } from '../platform/types.js';
import { LIST_JOBS, listLockName } from './exclusive.js';
import { runJob, type ActiveRun } from './run-job.js';
import { recordConflict, supersede, type OutboxRow } from './conflicts.js';
import { finishRun, zeroCounters, type RunCounters } from './runs.js';

export interface PushDeps {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
  waitMs?: number;
  clock?: () => Date;
}

export interface PushResult {
  runId: number;
  list: string;
  applied: number;
  created: number;
  conflicts: number;
  failed: number;
  /** Changes left pending with an error (retried later). */
  retrying: number;
  counters: RunCounters;
}

type Outcome =
  | { kind: 'applied'; id: string }
  | { kind: 'created'; id: string }
  | { kind: 'conflict'; id: string; reread: boolean }
  | { kind: 'retry'; error: string }
  | { kind: 'failed'; error: string };

const BATCH = 1000;

export async function pushList(deps: PushDeps, list: ListConfig): Promise<PushResult> {
  return runJob(deps, { list: list.name, job: 'push', lockName: listLockName(list.name), waitMs: deps.waitMs ?? 0, holderJobs: LIST_JOBS, recordSkipped: true }, (run) => pushLocked(deps, list, run));
}

export async function loadMappingOrExplain(db: Knex, config: Config, list: ListConfig): Promise<TableMapping> {
  const mapping = await loadTableMapping(db, config.database.schema, list.name);
  if (!mapping) throw new UsageError(`List "${list.name}" has no mirror table yet: run "listsync pull --list ${list.name}" first.`);
  return mapping;
}

async function pushLocked(deps: PushDeps, list: ListConfig, run: ActiveRun): Promise<PushResult> {
  const { db, config, client } = deps;
  const { runId, log } = run;
  const mapping = await loadMappingOrExplain(db, config, list);
  const before = run.statsAtStart;
  const result: PushResult = { runId, list: list.name, applied: 0, created: 0, conflicts: 0, failed: 0, retrying: 0, counters: zeroCounters() };
  const now = deps.clock?.() ?? new Date();

  try {
    const rows = (await db('listsync.outbox')
      .where({ list_name: list.name })
      .where((q) => q.where((p) => p.where('status', 'pending').where('next_attempt_at', '<=', now)).orWhere('status', 'sending'))
      .orderBy('id')) as OutboxRow[];
    log.info({ changes: rows.length }, 'push started');

    for (let i = 0; i < rows.length; i += BATCH) {
      const batch = rows.slice(i, i + BATCH);
      const outcomes = await mapConcurrent(batch, Math.max(2, config.platform.maxInFlight * 2), (row) => pushOne(deps, list, mapping, row));
      const reread: string[] = [];
      for (const o of outcomes) {
        if (o.kind === 'applied' || o.kind === 'created') {
          result[o.kind === 'applied' ? 'applied' : 'created']++;
          reread.push(o.id);
        } else if (o.kind === 'conflict') {
          result.conflicts++;
          if (o.reread) reread.push(o.id);
        } else if (o.kind === 'failed') result.failed++;
        else result.retrying++;
      }
      await rereadItems(deps, list, mapping, reread);
      // Applied changes are done (the run's counters keep the tally); the outbox holds only what is open or needs a look.
      await db('listsync.outbox').where({ list_name: list.name, status: 'applied' }).whereIn('id', batch.map((r) => r.id)).delete();
    }
    const after = client.stats();
    result.counters.requests = after.requests - before.requests;
    result.counters.retries = after.retries - before.retries;
    result.counters.changes_applied = result.applied + result.created;
    result.counters.changes_conflicted = result.conflicts;
    result.counters.changes_failed = result.failed;
    await finishRun(db, runId, 'succeeded', { counters: result.counters, details: { created: result.created, retrying: result.retrying } });
    log.info({ applied: result.applied, created: result.created, conflicts: result.conflicts, failed: result.failed, retrying: result.retrying }, 'push finished');
    return result;
  } catch (err) {
    const after = client.stats();
    await finishRun(db, runId, 'failed', {
      error: (err as Error).message,
      counters: { requests: after.requests - before.requests, retries: after.retries - before.retries, changes_applied: result.applied + result.created, changes_conflicted: result.conflicts, changes_failed: result.failed },
    }).catch(() => undefined); // a database that is gone: runJob reports the original error
    log.error({ err }, 'push failed; unsent changes stay pending');
    throw err;
  }
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
      throw new Error(`column ${column}: ${(err as Error).message}`, { cause: err });
    }
  }
  return data;
}

async function pushOne(deps: PushDeps, list: ListConfig, mapping: TableMapping, row: OutboxRow): Promise<Outcome> {
  const { db, client, config } = deps;
  const zone = config.platform.timeZone;
  const recovering = row.status === 'sending';
  const sent = recovering && row.sent_changes ? row.sent_changes : row.changes;

  let data: Record<string, string>;
  try {
    data = toWire(mapping, sent, zone);
  } catch (err) {
    return fail(db, row, `cannot convert the change for the platform: ${(err as Error).message}`, true, list.maxPushAttempts);
  }

  if (row.op === 'create') {
    if (recovering) {
      return fail(db, row, 'a previous push was stopped while creating this item: it may exist on the platform already. Check the platform, then re-queue it with "listsync push --retry-failed" if it is not there.', true, list.maxPushAttempts);
    }
    await markSending(db, row, sent);
    try {
      const id = await client.createItem(list.appID, list.listID, data);
      await settleCreated(db, mapping, row, sent, id);
      return { kind: 'created', id };
    } catch (err) {
      if (err instanceof AuthError) throw err;
      if (err instanceof PlatformError && err.maybeApplied) {
        return fail(db, row, `the create may have reached the platform without an answer (${err.message}); not retried to avoid a duplicate. Check the platform.`, true, list.maxPushAttempts);
      }
      return fail(db, row, (err as Error).message, false, list.maxPushAttempts);
    }
  }

  const itemId = row.item_id!;
  const base = Number(row.base_version ?? 0);
  await markSending(db, row, sent);
  try {
    await client.updateItem(list.appID, list.listID, itemId, base, data);
    await settleApplied(db, row, sent, base === 0 ? null : base + 1);
    return { kind: 'applied', id: itemId };
  } catch (err) {
    if (err instanceof AuthError) throw err;
    if (!(err instanceof PlatformError) && !recovering) return fail(db, row, (err as Error).message, false, list.maxPushAttempts);
    // Any rejection: look at the item's current version before deciding.
    let remote: Item | undefined;
    try {
      remote = await fetchItem(client, list, itemId);
    } catch (e) {
      if (e instanceof AuthError) throw e;
      return fail(db, row, `${(err as Error).message}; and the item could not be re-read: ${(e as Error).message}`, false, list.maxPushAttempts);
    }
    if (!remote) return fail(db, row, `item ${itemId} no longer exists on the platform (deleted there?); the change cannot be applied`, true, list.maxPushAttempts);
    const remoteVersion = Number(remote[list.versionField]);
    if (base === 0 || remoteVersion === base) return fail(db, row, (err as Error).message, false, list.maxPushAttempts);
    if ((recovering || (err instanceof PlatformError && err.maybeApplied)) && remoteVersion === base + 1 && carries(remote, data)) {
      // Our own earlier attempt was applied; the retry saw its echo.
      await settleApplied(db, row, sent, remoteVersion);
      return { kind: 'applied', id: itemId };
    }
    return conflict(deps, list, mapping, row, sent, data, remote, remoteVersion);
  }
}

/** The remote item holds every value we sent. */
function carries(remote: Item, data: Record<string, string>): boolean {
  return Object.entries(data).every(([field, value]) => String(remote[field] ?? '') === value);
}

async function fetchItem(client: PlatformClient, list: ListConfig, id: string): Promise<Item | undefined> {
  const { items } = await client.queryItems(list.appID, list.listID, { Filters: [{ Field: list.idField, Type: Operator.Equal, Value: id }], PageIndex: 1, PageSize: 1 });
  return items.find((i) => String(i[list.idField]) === id);
}

async function markSending(db: Knex, row: OutboxRow, sent: Record<string, unknown>): Promise<void> {
  await db('listsync.outbox').where({ id: row.id }).update({ status: 'sending', sent_changes: JSON.stringify(sent), updated_at: db.fn.now() });
}

/** The outbox row's changes that differ from what was sent (bound: the sent changes as JSON): edits made meanwhile. */
const REMAINDER = `(select coalesce(jsonb_object_agg(k, v), '{}'::jsonb) from jsonb_each(o.changes) e(k, v) where (?::jsonb) -> k is distinct from v)`;

/**
 * The sent part is applied. Edits made while it was in flight (the remainder)
 * stay pending against the new version.
 */
async function settleApplied(db: Knex | Knex.Transaction, row: OutboxRow, sent: Record<string, unknown>, newVersion: number | null): Promise<void> {
  await db.raw(
    `with cur as (
       select o.id, ${REMAINDER} as rest
         from listsync.outbox o where o.id = ?)
     update listsync.outbox o
        set status = case when cur.rest = '{}'::jsonb then 'applied' else 'pending' end,
            changes = case when cur.rest = '{}'::jsonb then o.changes else cur.rest end,
            base_version = case when cur.rest = '{}'::jsonb then o.base_version else coalesce(?::bigint, o.base_version) end,
            applied_at = now(), last_error = null, sent_changes = null, updated_at = now(), next_attempt_at = now()
       from cur where o.id = cur.id`,
    [JSON.stringify(sent), row.id, newVersion],
  );
}

async function settleCreated(db: Knex, mapping: TableMapping, row: OutboxRow, sent: Record<string, unknown>, id: string): Promise<void> {
  await db.transaction(async (trx) => {
    await markListsyncWriter(trx);
    await trx.raw('update ?? set id = ? where id = ?', [`${mapping.schema}.${mapping.table}`, id, row.local_id]);
    // Edits made to the row while it was being created stay pending as an update of the new item (version 1).
    await trx.raw(
      `with cur as (
         select o.id, ${REMAINDER} as rest
           from listsync.outbox o where o.id = ?)
       update listsync.outbox o
          set item_id = ?,
              status = case when cur.rest = '{}'::jsonb then 'applied' else 'pending' end,
              op = case when cur.rest = '{}'::jsonb then 'create' else 'update' end,
              changes = case when cur.rest = '{}'::jsonb then o.changes else cur.rest end,
              base_version = case when cur.rest = '{}'::jsonb then null else 1 end,
              applied_at = now(), last_error = null, sent_changes = null, updated_at = now()
         from cur where o.id = cur.id`,
      [JSON.stringify(sent), row.id, id],
    );
  });
}

/** Records an error: pending with backoff (retryable) or failed (final, or out of attempts). */
async function fail(db: Knex, row: OutboxRow, error: string, final: boolean, maxAttempts: number): Promise<Outcome> {
  const attempts = row.attempts + 1;
  const failed = final || attempts >= maxAttempts;
  const backoffSeconds = Math.min(30 * 2 ** (attempts - 1), 1800);
  await db('listsync.outbox')
    .where({ id: row.id })
    .update({
      status: failed ? 'failed' : 'pending',
      attempts,
      last_error: error,
      sent_changes: null,
      next_attempt_at: db.raw('now() + make_interval(secs => ?)', [failed ? 0 : backoffSeconds]),
      updated_at: db.fn.now(),
    });
  return failed ? { kind: 'failed', error } : { kind: 'retry', error };
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
    return { kind: 'conflict', id: itemId, reread: true };
  }
  if (policy === 'remote-wins') {
    await db.transaction(async (trx) => {
      await recordConflict(trx, list, row, sent, remote, remoteVersion, 'resolved', 'remote-wins', mapping);
      await supersede(trx, row.id, "conflict: the platform's newer version won (remote-wins)");
      await upsertItems(trx, mapping, [remote], deps.config.platform.timeZone);
    });
    return { kind: 'conflict', id: itemId, reread: false };
  }
  await db.transaction(async (trx) => {
    await recordConflict(trx, list, row, sent, remote, remoteVersion, 'open', null, mapping);
    await trx('listsync.outbox')
      .where({ id: row.id })
      .update({ status: 'conflict', sent_changes: null, last_error: `conflict: the platform is at version ${remoteVersion}, the change was made on ${row.base_version}; settle it with "listsync conflicts resolve"`, updated_at: trx.fn.now() });
  });
  return { kind: 'conflict', id: itemId, reread: false };
}

/** Re-reads items by ID (In, 1000 per request) and writes them to the mirror. */
export async function rereadItems(deps: Pick<PushDeps, 'db' | 'client' | 'config'>, list: ListConfig, mapping: TableMapping, ids: readonly string[]): Promise<UpsertResult[]> {
  const out: UpsertResult[] = [];
  for (let i = 0; i < ids.length; i += 1000) {
    const chunk = ids.slice(i, i + 1000);
    const { items } = await deps.client.queryItems(list.appID, list.listID, {
      Filters: [{ Field: list.idField, Type: Operator.In, Value: JSON.stringify(chunk) }],
      PageIndex: 1,
      PageSize: 1000,
    });
    out.push(await deps.db.transaction((trx) => upsertItems(trx, mapping, items, deps.config.platform.timeZone)));
  }
  return out;
}

async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
