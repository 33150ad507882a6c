/**
 * One process's share of the queue: it takes jobs while it has a free slot
 * (`slots`, serve.workers), runs each through `execute`, and settles it on
 * the queue: completed, failed (retried with backoff by pg-boss while the
 * failure is transient and retries are left), or handed back (shutdown, the
 * list busy, the account at its cap). It looks for work every `pollMs`, and
 * at once after a job of its own ends or `wake()` (this process sent one).
 * While a job runs, its lease is renewed every third of it; a worker that
 * dies stops renewing, and pg-boss's supervision fails the job by timeout
 * into a retry that another worker takes (test/engine-takeover.test.ts).
 * No pooled connection is held while it sleeps or a job runs (a take holds
 * one for its two statements).
 */
import type PgBoss from 'pg-boss';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import { QUEUE } from './boss.js';
import { handBack, refuseRetries, renew, takeNext, type TakenJob } from './job-rows.js';

export type JobEnd =
  | { kind: 'done'; output: object }
  | { kind: 'failed'; message: string; retry: boolean }
  | { kind: 'handBack'; delaySeconds: number; why: string };

export interface WorkerOptions {
  db: Knex;
  boss: PgBoss;
  logger: Logger;
  slots: number;
  pollMs: number;
  /** How often the leases of running jobs are renewed (a third of the shortest lease). */
  renewEveryMs: number;
  /** The lease of a job taken (seconds). */
  leaseOf(job: TakenJob): number;
  execute(job: TakenJob): Promise<JobEnd>;
}

export interface Worker {
  /** Looks for work now. */
  wake(): void;
  readonly running: number;
  readonly slots: number;
  /** The ids of the jobs running here. */
  runningIds(): string[];
  /** Resolves with how the job ended when it runs here and ends; undefined for jobs run elsewhere. */
  endOf(id: string): Promise<JobEnd> | undefined;
  /** Stops taking jobs; the running ones go on. */
  stopTaking(): Promise<void>;
  /** Hands back every job still running here (shutdown's last step). */
  handBackRunning(why: string): Promise<void>;
  /** Resolves when no job runs here. */
  idle(): Promise<void>;
}

export function startWorker(opts: WorkerOptions): Worker {
  const { db, logger } = opts;
  /** Jobs taken here: `ended` once the run returned (its end is being written to the queue). */
  const running = new Map<string, { lease: number; end: Promise<JobEnd>; ended: boolean; settled: Promise<void> }>();
  let stopping = false;
  let wakeUp: (() => void) | undefined;
  /** A wake while the loop was taking (a job of its own ended then): its next sleep is skipped, not slept through. */
  let woken = false;
  let warned = false;

  const wake = () => {
    woken = true;
    wakeUp?.();
  };
  const sleep = (ms: number) =>
    new Promise<void>((r) => {
      if (woken) return r();
      const t = setTimeout(r, ms);
      wakeUp = () => {
        clearTimeout(t);
        r();
      };
    });

  function start(job: TakenJob): void {
    const end = opts.execute(job).catch((err: unknown): JobEnd => ({ kind: 'failed', message: String(err), retry: true }));
    const entry = { lease: opts.leaseOf(job), end, ended: false, settled: Promise.resolve() };
    entry.settled = end
      .then((e) => {
        entry.ended = true;
        return settle(job, e);
      })
      .finally(() => {
        running.delete(job.id);
        wake();
      });
    running.set(job.id, entry);
  }

  const settle = (job: TakenJob, end: JobEnd) => settleOnQueue(opts, job, end);

  async function fill(): Promise<void> {
    while (!stopping && running.size < opts.slots) {
      const job = await takeNext(db);
      if (!job) return;
      start(job);
    }
  }

  const loop = (async () => {
    while (!stopping) {
      woken = false;
      wakeUp = undefined;
      try {
        await fill();
        if (warned) logger.info('job engine: the queue answers again');
        warned = false;
      } catch (err) {
        if (!warned) logger.warn({ err }, 'job engine: cannot read the queue; trying again');
        warned = true;
      }
      if (!stopping) await sleep(opts.pollMs);
    }
  })();

  const heartbeat = startHeartbeat(opts, () => new Map([...running].map(([id, r]) => [id, r.lease])));

  return {
    wake,
    get running() {
      return running.size;
    },
    slots: opts.slots,
    runningIds: () => [...running.keys()],
    endOf: (id) => running.get(id)?.end,
    async stopTaking() {
      stopping = true;
      wake();
      await loop;
    },
    async handBackRunning(why) {
      clearInterval(heartbeat);
      // A job whose run returned is settling its own end; only those still running are handed back here.
      const settling = [...running.values()].filter((r) => r.ended).map((r) => r.settled);
      const stuck = [...running].filter(([, r]) => !r.ended).map(([id]) => id);
      await Promise.all([
        ...settling,
        ...stuck.map((id) =>
          handBack(db, id, 0, why).catch((err: unknown) => logger.warn({ err, job: id }, 'job engine: could not hand the job back')),
        ),
      ]);
    },
    async idle() {
      while (running.size) await Promise.allSettled([...running.values()].map((r) => r.settled));
    },
  };
}

/** Writes how a job ended to the queue, trying again while the database is away; a job never settled is taken again when its lease runs out. */
async function settleOnQueue(opts: WorkerOptions, job: TakenJob, end: JobEnd): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      if (end.kind === 'done') await opts.boss.complete(QUEUE, job.id, end.output);
      else if (end.kind === 'handBack') await handBack(opts.db, job.id, end.delaySeconds, end.why);
      else {
        if (!end.retry) await refuseRetries(opts.db, job.id);
        await opts.boss.fail(QUEUE, job.id, { message: end.message });
      }
      return;
    } catch (err) {
      opts.logger.debug({ err, job: job.id }, 'job engine: could not settle the job yet');
      await new Promise((r) => setTimeout(r, 1000 * (attempt + 1)));
    }
  }
  opts.logger.warn({ job: job.id }, 'job engine: could not settle the job; its lease runs out and the queue takes it again');
}

/** Renews the leases of the jobs running here every `renewEveryMs`. */
function startHeartbeat(opts: WorkerOptions, leases: () => Map<string, number>): NodeJS.Timeout {
  const timer = setInterval(() => {
    renew(opts.db, leases()).catch((err: unknown) => opts.logger.debug({ err }, 'job engine: renewing leases failed; trying again'));
  }, opts.renewEveryMs);
  timer.unref();
  return timer;
}
