/**
 * The one owner of a run: every pull, backfill, push, reconcile, users and directory run goes
 * through `runJob`, which
 *
 * 1. takes the lock (a run that has to give way is recorded as 'skipped'),
 * 2. closes runs a dead process left 'running',
 * 3. opens the `sync_runs` row before any platform request or table set-up,
 * 4. counts the platform requests the run makes (its own, in a request tally,
 *    even when other runs share the client), and traces them (src/store/run-events.ts),
 * 5. records the outcome the body returns, or settles in the transaction of its last writes
 *    (src/sync/recorded-run.ts; the shapes and the rule: src/sync/run-outcome.ts),
 * 6. records a failure, whatever step it happens at, with a secret-free
 *    message (a lost database connection is named as such),
 * 7. records a run stopped by the shutdown signal as 'interrupted', and
 * 8. releases the lock without letting a failed release hide the real error.
 */
import type { Config } from '../config.js';
import { explainDatabaseError, type Knex } from '../db.js';
import { LockedError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { acquireLock } from './lock.js';
import { currentFire } from './fire-scope.js';
import { withRequestTally } from '../platform/request-tally.js';
import { withRequestTrace } from '../platform/request-trace.js';
import { withRequestSource } from '../platform/request-source.js';
import { RunTrace, withRunTrace } from '../store/run-events.js';
import { HOLDER, closeAbandonedRuns, describeRunning, finishRun, startRun, type Job } from '../store/runs.js';
import { RecordedRun, type ActiveRun } from './recorded-run.js';
import { RunFailed, type RunEnd } from './run-outcome.js';

export type { ActiveRun } from './recorded-run.js';
export { RunFailed, type RunEnd, type RunOutcome } from './run-outcome.js';

export interface RunJobDeps {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
}

/** What a job's entry point takes: the above, how long to wait for a run holding the lock, and the shutdown signal. */
export interface JobDeps extends RunJobDeps {
  /** Wait this long for another run of the list to finish instead of failing at once. */
  waitMs?: number;
  /** Aborted on shutdown: the job stops at its next safe point (after the page or change in flight). */
  signal?: AbortSignal;
}

/** A page a job has read and written: what its progress (a bar, or a log line per page) shows. */
export interface PageDone {
  list: string;
  runId: number;
  /** 1-based index of the page just written. */
  page: number;
  pageCount: number;
  totalCount: number;
  items: number;
  itemsSoFar: number;
}

export interface RunJobSpec {
  /** The list the run belongs to (`_users` for the users directory). */
  list: string;
  job: Job;
  /** The advisory lock the run holds (shared by the jobs of one list). */
  lockName: string;
  /** Wait this long for the lock (0 = give way at once with LockedError). */
  waitMs: number;
  /** Jobs whose running rows name the lock's holder in the LockedError. */
  holderJobs: readonly Job[];
  /** Record a 'skipped' run when the lock is held elsewhere. */
  recordSkipped: boolean;
}

/** Runs `body` as one recorded run of `spec.job`: the body returns its outcome and result, the run's row is written here. */
export async function runJob<T>(deps: JobDeps, spec: RunJobSpec, body: (run: ActiveRun) => Promise<RunEnd<T>>): Promise<T> {
  const lock = await takeLock(deps, spec);
  let outcome: { ok: true; value: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: await withRequestTally(() => runRecorded(deps, spec, body)) };
  } catch (err) {
    outcome = { ok: false, error: explainDatabaseError(err, deps.config.database.url) };
  }
  // A connection that died with the run cannot unlock; the lock went with it. Never hide the run's own outcome.
  await lock
    .release()
    .catch((err: unknown) => deps.logger.debug({ err, lock: spec.lockName }, 'releasing the lock failed; it ended with its connection'));
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

async function takeLock(deps: RunJobDeps, spec: RunJobSpec) {
  try {
    // Under serve, on the lock pool: a run waiting for its lock never holds a connection of the work pool.
    return await acquireLock(currentFire()?.lockDb ?? deps.db, spec.lockName, {
      waitMs: spec.waitMs,
      describeHolder: () => describeRunning(deps.db, spec.list, spec.holderJobs),
    });
  } catch (err) {
    if (err instanceof LockedError && spec.recordSkipped) {
      const runId = await startRun(deps.db, spec.list, spec.job);
      noteRun(runId);
      await finishRun(deps.db, runId, 'skipped', { error: err.message });
    }
    throw err;
  }
}

async function runRecorded<T>(deps: JobDeps, spec: RunJobSpec, body: (run: ActiveRun) => Promise<RunEnd<T>>): Promise<T> {
  const { db } = deps;
  await closeAbandonedRuns(db, spec.list, [spec.job]);
  const runId = await startRun(db, spec.list, spec.job, { engineJob: currentFire()?.engineJob });
  noteRun(runId);
  const log = deps.logger.child({ ...unbound(deps.logger, { list: spec.list, job: spec.job }), runId });
  const run = new RecordedRun(deps, runId, log);
  const trace = new RunTrace(db, runId, log);
  trace.add('start', { job: spec.job, holder: HOLDER });
  try {
    const end = await withRequestSource(spec.job, () => traced(trace, () => body(run)));
    await run.finish(end.outcome);
    return end.result;
  } catch (err) {
    await run.fail(err);
    throw err instanceof RunFailed ? err.cause : err;
  } finally {
    await trace.close();
  }
}

/** Runs `fn` inside the run's trace: its plan, pages and every platform request it makes are recorded there. */
function traced<T>(trace: RunTrace, fn: () => Promise<T>): Promise<T> {
  return withRunTrace(trace, () => withRequestTrace((e) => trace.add('request', { ...e }), fn));
}

/** Tells serve's queue which row the run opened: what the run cannot record, the queue does. */
function noteRun(runId: number): void {
  const fire = currentFire();
  if (fire) fire.runId = runId;
}

/** The bindings a logger does not carry yet (a command may hand in one bound to the list and job): no key twice on a line. */
function unbound(logger: Logger, bindings: Record<string, string>): Record<string, string> {
  const has = logger.bindings();
  return Object.fromEntries(Object.entries(bindings).filter(([k]) => has[k] === undefined));
}
