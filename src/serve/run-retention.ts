/**
 * serve keeps the run history (`listsync.sync_runs`) to `serve.runHistoryDays`:
 * every fire of every job writes a row (500 lists each minute is ~720,000 a
 * day), so serve prunes in the background, once shortly after start and then
 * hourly (test/run-retention.test.ts).
 *
 * - Each batch is one statement on the shared pool: no connection is held
 *   between batches or while waiting for the next prune, and the pool keeps
 *   connections beyond the workers' (src/serve/worker-count.ts).
 * - A prune that fails logs one warning and the next one tries again: a
 *   history kept a little longer harms nothing.
 * - At shutdown no new prune starts, the one under way stops after its
 *   batch, and `stop()` resolves once it has, or after STOP_WAIT_MS (a
 *   statement waiting for an unreachable database must not hold shutdown up
 *   past its 10 s; the statement then fails as the pool closes, and is not
 *   retried).
 */
import type { Knex } from '../db.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { pruneRequestMinutes } from '../store/request-minutes.js';
import { pruneRuns } from '../store/runs.js';
import { waitFor } from './deadline.js';

export interface RunRetentionTiming {
  /** The first prune, this long after start (lets serve's first fires go first). */
  firstAfterMs: number;
  /** Then one prune each this often. */
  everyMs: number;
  /** Rows per delete statement (the store's default when not given). */
  batch?: number;
}

export const RUN_RETENTION_TIMING: RunRetentionTiming = { firstAfterMs: 60_000, everyMs: 60 * 60_000 };

/** How long shutdown waits for the batch under way. */
const STOP_WAIT_MS = 2000;

export interface RunRetention {
  /** Starts no new prune and resolves once the one under way stopped. */
  stop(): Promise<void>;
}

export function startRunRetention(opts: { db: Knex; logger: Logger; days: number; timing?: Partial<RunRetentionTiming> }): RunRetention {
  const timing = { ...RUN_RETENTION_TIMING, ...opts.timing };
  let stopped = false;
  let underWay: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  const schedule = (afterMs: number) => {
    timer = setTimeout(() => {
      underWay = pruneOnce().finally(() => {
        if (!stopped) schedule(timing.everyMs);
      });
    }, afterMs);
    // The HTTP server keeps serve alive; a pending prune must not keep a stopping process up.
    timer.unref();
  };

  const pruneOnce = async () => {
    try {
      const { deleted } = await pruneRuns(opts.db, opts.days, { batch: timing.batch, stopped: () => stopped });
      if (deleted > 0)
        opts.logger.info({ deleted, runHistoryDays: opts.days }, `run history: removed ${deleted} runs older than ${opts.days} days`);
      // The per-minute request tally (the budget page) is kept as long as the runs it sits beside.
      if (!stopped) await pruneRequestMinutes(opts.db, opts.days);
    } catch (err) {
      opts.logger.warn({ err: coerceError(err) }, 'run history: could not remove old runs; trying again at the next prune');
    }
  };

  schedule(timing.firstAfterMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await waitFor(underWay, STOP_WAIT_MS);
    },
  };
}
