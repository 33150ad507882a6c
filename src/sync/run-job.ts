/**
 * The one owner of a run: every pull, backfill, push, reconcile and users run
 * goes through `runJob`, which
 *
 * 1. takes the lock (a run that has to give way is recorded as 'skipped'),
 * 2. closes runs a dead process left 'running',
 * 3. opens the `sync_runs` row before any platform request or table set-up,
 * 4. counts the platform requests the run makes (its own, in a request tally,
 *    even when other runs share the client),
 * 5. records a failure, whatever step it happens at, with a secret-free
 *    message (a lost database connection is named as such), and
 * 6. records a run stopped by the shutdown signal as 'interrupted', and
 * 7. releases the lock without letting a failed release hide the real error.
 *
 * The job's body records its own success (often in the transaction that
 * commits its last writes) and may record its own failure with details; what
 * it leaves 'running' when it throws is closed here.
 */
import type { Config } from '../config.js';
import { explainDatabaseError, type Knex } from '../db.js';
import { LockedError, coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ClientStats, PlatformClient } from '../platform/client.js';
import { scrubSecrets } from '../secrets.js';
import { secretsOf } from '../config.js';
import { acquireLock } from './lock.js';
import { currentFire } from './fire-scope.js';
import { withRequestTally } from '../platform/request-tally.js';
import { withRequestTrace } from '../platform/request-trace.js';
import { withRequestSource } from '../platform/request-source.js';
import { RunTrace, withRunTrace } from '../store/run-events.js';
import {
  HOLDER,
  closeAbandonedRuns,
  describeRunning,
  finishRun,
  isRunOpen,
  markInterrupted,
  startRun,
  type Job,
  type RunCounters,
} from '../store/runs.js';

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

export interface ActiveRun {
  runId: number;
  /** The job's logger with list, job and runId bound. */
  log: Logger;
  /** The client's counters when the run opened. */
  statsAtStart: ClientStats;
  /** Platform requests and retries made since the run started. */
  requests(): Pick<RunCounters, 'requests' | 'retries'>;
}

export async function runJob<T>(deps: JobDeps, spec: RunJobSpec, body: (run: ActiveRun) => Promise<T>): Promise<T> {
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

async function runRecorded<T>(deps: JobDeps, spec: RunJobSpec, body: (run: ActiveRun) => Promise<T>): Promise<T> {
  const { db, client } = deps;
  await closeAbandonedRuns(db, spec.list, [spec.job]);
  const runId = await startRun(db, spec.list, spec.job, { engineJob: currentFire()?.engineJob });
  noteRun(runId);
  const log = deps.logger.child({ ...unbound(deps.logger, { list: spec.list, job: spec.job }), runId });
  const mark = client.stats();
  const requests = () => {
    const now = client.stats();
    return { requests: now.requests - mark.requests, retries: now.retries - mark.retries };
  };
  const trace = new RunTrace(db, runId, log);
  trace.add('start', { job: spec.job, holder: HOLDER });
  try {
    const value = await withRequestSource(spec.job, () => traced(trace, () => body({ runId, log, statsAtStart: mark, requests })));
    await recordInterruption(deps, runId, log);
    return value;
  } catch (err) {
    if (!(await recordInterruption(deps, runId, log)))
      await recordFailure(deps, runId, explainDatabaseError(err, deps.config.database.url), requests(), log);
    throw err;
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

/** After a shutdown signal, the run is 'interrupted' unless it succeeded; true when it was recorded so. */
async function recordInterruption(deps: JobDeps, runId: number, log: Logger): Promise<boolean> {
  if (!deps.signal?.aborted) return false;
  const reason: unknown = deps.signal.reason;
  try {
    await markInterrupted(deps.db, runId, typeof reason === 'string' ? reason : 'shutdown');
    return true;
  } catch (err) {
    log.warn({ err }, 'could not record the interrupted run (the next run closes it as abandoned)');
    return false;
  }
}

/** Marks the run failed unless the body already recorded its outcome; a database that is gone is logged, not thrown. */
async function recordFailure(
  deps: RunJobDeps,
  runId: number,
  err: unknown,
  counters: Pick<RunCounters, 'requests' | 'retries'>,
  log: Logger,
): Promise<void> {
  const message = scrubSecrets(coerceError(err).message, secretsOf(deps.config));
  const fire = currentFire();
  try {
    if (await isRunOpen(deps.db, runId)) {
      // The body did not get to record (nor log) it: a failure before the first page still makes a log line.
      log.error({ err }, 'failed');
      if (fire) fire.logged = true;
      await finishRun(deps.db, runId, 'failed', { error: message, counters });
    }
  } catch (recordErr) {
    if (fire?.logged !== true) log.error({ err }, 'failed');
    if (fire) fire.logged = true;
    // Under serve the queue records it once the database is back; elsewhere the next run closes it as abandoned.
    log.warn(
      { err: recordErr },
      fire ? 'could not record the failed run yet' : 'could not record the failed run (the next run closes it as abandoned)',
    );
  }
}
