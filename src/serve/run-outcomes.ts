/**
 * Every fire serve takes ends in `listsync.sync_runs`: what a run could not
 * record itself is recorded here. A fire coalesced or dropped at shutdown is
 * a 'skipped' row with its reason; a run that failed before it opened its row
 * (the database refused) is a 'failed' row; a run whose row it could not
 * close is closed. While the database is away these wait in memory and are
 * written when it is back; `/metrics` counts them at once (`unrecorded`) and
 * `/healthz` reads the latest outcome per target from here
 * (test/serve-capacity.test.ts, "the database refusing connections").
 */
import type { Knex } from '../db.js';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import { closeOpenRun, recordClosedRun, type Job } from '../store/runs.js';
import { waitFor } from './deadline.js';

export interface FireOutcome {
  /** The `sync_runs` list and job. */
  list: string;
  job: Job;
  /** The scheduler's target, e.g. `pull:orders`. */
  target: string;
  status: 'succeeded' | 'failed' | 'skipped' | 'interrupted';
  reason?: string;
  /** True for a fire skipped for lack of capacity (coalesced). */
  capacity?: boolean;
  /** The row the run opened, if it got that far. */
  runId?: number;
  firedAt: Date;
}

export interface RunOutcomes {
  note(outcome: FireOutcome): void;
  /** Outcomes not written to `sync_runs` yet (the database is away). */
  unrecorded(): readonly FireOutcome[];
  /** The latest outcome per target. */
  latest(): ReadonlyMap<string, FireOutcome>;
  /** Writes what waits, giving up after `timeoutMs`; true when nothing is left. */
  flush(timeoutMs: number): Promise<boolean>;
  stop(): void;
}

export function createRunOutcomes(opts: { db: Knex; logger: Logger; retryMs?: number }): RunOutcomes {
  const { db, logger } = opts;
  const pending: FireOutcome[] = [];
  const latest = new Map<string, FireOutcome>();
  let writing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let warned = false;

  async function writeOne(o: FireOutcome): Promise<void> {
    const error = o.reason ?? o.status;
    if (o.runId !== undefined) {
      if (o.status === 'failed' || o.status === 'interrupted') await closeOpenRun(db, o.runId, o.status, error);
    } else if (o.status === 'failed' || o.status === 'skipped') {
      o.runId = await recordClosedRun(db, { list: o.list, job: o.job, status: o.status, error, firedAt: o.firedAt });
    }
  }

  async function writeAll(): Promise<void> {
    while (pending.length) {
      try {
        await writeOne(pending[0]!);
      } catch (err) {
        if (!warned)
          logger.warn({ err, waiting: pending.length }, 'cannot record runs yet; they are kept and written when the database is back');
        warned = true;
        schedule();
        return;
      }
      pending.shift();
    }
    if (warned) logger.info('runs kept while the database was away are recorded');
    warned = false;
  }

  function kick(): Promise<void> {
    writing ??= writeAll().finally(() => (writing = undefined));
    return writing;
  }

  function schedule(): void {
    if (stopped || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void kick();
    }, opts.retryMs ?? 2000);
    timer.unref();
  }

  return {
    note(o) {
      latest.set(o.target, o);
      const needsWrite = o.runId === undefined ? o.status === 'failed' || o.status === 'skipped' : o.status !== 'succeeded';
      if (!needsWrite) return;
      pending.push(o);
      void kick();
    },
    unrecorded: () => [...pending],
    latest: () => latest,
    async flush(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (pending.length && Date.now() < deadline) {
        await waitFor(kick(), deadline - Date.now());
        if (pending.length) await new Promise((r) => setTimeout(r, Math.min(200, Math.max(0, deadline - Date.now()))));
      }
      if (pending.length) logger.warn({ unrecorded: pending.length }, 'could not record every run before exiting');
      return pending.length === 0;
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** A failure's one-line description: its message and code. */
export function describeFailure(err: unknown): { error: string; code?: string } {
  const e = coerceError(err) as Error & { code?: unknown };
  return { error: e.message, ...(typeof e.code === 'string' ? { code: e.code } : {}) };
}
