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
 *   for on the platform first (src/sync/push/lost-creates.ts, push/create.ts): found → adopted,
 *   not found → sent again, once; ambiguous → failed, naming the candidates.
 *   A withdrawn create (its local row was deleted) is looked for the same way
 *   and the item deleted if it was created after all.
 * - A change is settled with its row: what a write is known to have produced
 *   (the new version, the new ID, the values sent) goes into the mirror row
 *   (src/mirror/write-results.ts) in the transaction that marks the change applied,
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
 *
 * The steps (each file names the tests that hold it): settle the writes an
 * earlier run left unread (push/settle-mirror.ts), take the due changes, send
 * them in batches, a few at a time (push/update.ts, push/create.ts,
 * push/delete.ts), each settled from what the platform answers or, when it
 * rejects or does not answer, from the item read back (the pure verdicts:
 * push/write-verdict.ts, push/lost-create-verdict.ts, src/conflicts/merge.ts and policy.ts;
 * what is sent: push/wire.ts), re-read what was written after each batch,
 * then return the run's outcome (push/outcome.ts counts it; src/sync/run-job.ts records it).
 */
import type { ListConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { AuthError, PlatformError } from '../platform/platform-errors.js';
import { zeroCounters, type RunCounters } from '../store/runs.js';
import * as outbox from '../store/outbox.js';
import type { OutboxRow } from '../store/outbox.js';
import { LIST_JOBS, listLockName } from './lock.js';
import { noteFieldRefusal } from './list-fields.js';
import { fieldsForWrite } from './write-fields.js';
import { pushCreate, withdrawCreate } from './push/create.js';
import { pushDelete } from './push/delete.js';
import { mapConcurrent } from './push/map-concurrent.js';
import { loadMappingOrExplain, syncDeleteCapture } from './push/mapping.js';
import {
  countNotTaken,
  describeOp,
  failureStreak,
  runDetails,
  tally,
  type CountedWrites,
  type Outcome,
  type PushResult,
} from './push/outcome.js';
import { fail, interrupted } from './push/record.js';
import { settleMirror, type SettleDeps } from './push/settle-mirror.js';
import type { ChangeContext, PushDeps } from './push/types.js';
import { pushUpdate } from './push/update.js';
import { runJob, RunFailed, type ActiveRun, type RunEnd } from './run-job.js';

export { loadMappingOrExplain, syncDeleteCapture } from './push/mapping.js';
export { MAX_CONSECUTIVE_FAILURES, type PushResult } from './push/outcome.js';
export { rereadItems } from './push/remote.js';
export type { PushDeps } from './push/types.js';
export { toWire } from './push/wire.js';

const BATCH = 1000;

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

async function pushLocked(deps: PushDeps, list: ListConfig, run: ActiveRun): Promise<RunEnd<PushResult>> {
  const { db } = deps;
  const { runId, log } = run;
  const mapping = await loadMappingOrExplain(db, deps.config, list);
  await syncDeleteCapture(db, mapping, list);
  const ctx: ChangeContext = { deps, list, mapping };
  const result = emptyResult(runId, list.name);
  const now = deps.clock?.() ?? new Date();
  const settle: SettleDeps = {
    db,
    client: deps.client,
    logger: log,
    zone: deps.config.platform.timeZone,
    rereadDelaysMs: deps.rereadDelaysMs,
  };
  try {
    // Writes of an earlier run that were never re-read come first.
    const counted: CountedWrites = new Map();
    countNotTaken(result, counted, (await settleMirror(settle, list, mapping)).notTaken);
    const rows = await outbox.dueChanges(db, list.name, now);
    // Never written by stale field metadata: a field removed since is not sent (src/sync/write-fields.ts).
    ctx.mapping = await fieldsForWrite(deps, list, mapping, rows, log);
    log.info({ changes: rows.length }, 'push started');
    const failures = failureStreak();
    // The shutdown signal is checked between changes, not passed down: a change in flight is sent and settled.
    const stopping = (): boolean => deps.signal?.aborted === true || failures.tooMany();
    let handled = 0;
    for (let i = 0; i < rows.length && !stopping(); i += BATCH) {
      const batch = rows.slice(i, i + BATCH);
      const limit = Math.max(2, deps.config.platform.maxInFlight * 2);
      const outcomes = await mapConcurrent(batch, limit, async (row) => failures.count(await pushOne(ctx, row)), stopping);
      handled += outcomes.length;
      const pageCount = Math.ceil(rows.length / BATCH);
      deps.onPage?.({
        list: list.name,
        runId,
        page: i / BATCH + 1,
        pageCount,
        totalCount: rows.length,
        items: outcomes.length,
        itemsSoFar: handled,
      });
      tally(result, outcomes, counted);
      await settleBatch(settle, ctx, result, counted);
    }
    await outbox.pruneApplied(db, list.name, list.appliedRetentionDays);
    result.counters = { ...result.counters, ...changeCounters(result), ...run.requests() };
    if (failures.tooMany()) return gaveUp(result, log, failures.streak);
    if (handled < rows.length) return stopped(result, log);
    return succeeded(result, log);
  } catch (err) {
    throw new RunFailed(err, { counters: changeCounters(result), line: 'push failed; unsent changes stay pending' });
  }
}

function emptyResult(runId: number, list: string): PushResult {
  return {
    runId,
    list,
    applied: 0,
    created: 0,
    deleted: 0,
    withdrawn: 0,
    conflicts: 0,
    merged: 0,
    settledByPolicy: 0,
    failed: 0,
    retrying: 0,
    behind: 0,
    stoppedAfterFailures: 0,
    stopped: false,
    counters: zeroCounters(),
  };
}

/** The run's changes so far, by outcome. */
function changeCounters(result: PushResult): Partial<RunCounters> {
  return {
    changes_applied: result.applied + result.created + result.deleted + result.withdrawn,
    changes_conflicted: result.conflicts,
    changes_failed: result.failed,
  };
}

/** After a batch: what was written is re-read; a change whose value the platform kept for itself is failed, counted once. */
async function settleBatch(settle: SettleDeps, ctx: ChangeContext, result: PushResult, counted: CountedWrites): Promise<void> {
  const settled = await settleMirror(settle, ctx.list, ctx.mapping);
  result.behind = settled.behind.length;
  countNotTaken(result, counted, settled.notTaken);
}

/**
 * One change. A platform failure of this change (after the client's retries)
 * leaves it pending with its error and backoff, and the push goes on. What
 * stops the push (a refused key, a lost database) puts it back to pending with
 * the error, its attempt counted, and is thrown.
 */
async function pushOne(ctx: ChangeContext, row: OutboxRow): Promise<Outcome> {
  const { deps, list, mapping } = ctx;
  try {
    if (row.op === 'create') return row.withdrawn_at ? await withdrawCreate(ctx, row) : await pushCreate(ctx, row);
    if (row.op === 'delete') return await pushDelete(ctx, row);
    return await pushUpdate(ctx, row);
  } catch (err) {
    if (err instanceof PlatformError && !(err instanceof AuthError)) {
      await noteFieldRefusal(deps.db, list, mapping, err);
      return fail(deps.db, row, `${describeOp(row)} failed: ${err.message}`, false, list.maxPushAttempts);
    }
    await interrupted(deps.db, row, err).catch(() => undefined);
    throw err;
  }
}

function succeeded(result: PushResult, log: Logger): RunEnd<PushResult> {
  const { applied, created, deleted, withdrawn, conflicts, failed, retrying, behind } = result;
  log.info({ applied, created, deleted, withdrawn, conflicts, failed, retrying, behind }, 'push finished');
  return { outcome: { status: 'succeeded', counters: result.counters, details: runDetails(result) }, result };
}

/** A push stopped by shutdown: what was sent is settled, the rest stays pending; the run is closed as stopped. */
function stopped(result: PushResult, log: Logger): RunEnd<PushResult> {
  result.stopped = true;
  log.warn(
    { applied: result.applied, created: result.created, deleted: result.deleted, conflicts: result.conflicts, failed: result.failed },
    'push stopped by shutdown after the changes in flight; unsent changes stay pending',
  );
  const error = 'stopped by shutdown; unsent changes stay pending';
  return { outcome: { status: 'failed', error, counters: result.counters, details: runDetails(result) }, result };
}

/** A push that stopped after changes kept failing in a row: the rest stay pending; the run failed. */
function gaveUp(result: PushResult, log: Logger, streak: number): RunEnd<PushResult> {
  result.stoppedAfterFailures = streak;
  const error = `stopped after ${streak} changes in a row failed (is the platform down?); the rest stay pending for the next push`;
  log.error({ applied: result.applied, retrying: result.retrying, failed: result.failed }, error);
  return { outcome: { status: 'failed', error, counters: result.counters, details: runDetails(result) }, result };
}
