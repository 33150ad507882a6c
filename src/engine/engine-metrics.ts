/**
 * `/metrics` for the job queue: jobs waiting and running per account (read
 * from the queue at scrape time, every serve process's jobs), and what this
 * worker saw: the time from a job being asked for (a cron fire, a request) to
 * its start, retries of failed jobs, and jobs taken over from a dead worker.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import type { JobPayload } from './job-payload.js';
import { queueCounts, type TakenJob } from './job-rows.js';

export interface EngineEvents {
  /** A job taken again after a failure (`takenOver`: its worker died and its lease ran out). */
  onRetry(job: TakenJob, takenOver: boolean): void;
  /** A job started: seconds since it was asked for. */
  onStart(payload: JobPayload, waitedSeconds: number): void;
}

export function registerEngineMetrics(registry: Registry, db: Knex, logger?: Logger): EngineEvents {
  const jobs = new Gauge({
    name: 'listsync_jobs',
    help: 'Jobs on the queue every serve process shares, by account and state (waiting: queued or waiting for a retry; running).',
    labelNames: ['account', 'state'] as const,
    registers: [registry],
    async collect() {
      try {
        const counts = await Promise.race([queueCounts(db), new Promise<undefined>((r) => setTimeout(() => r(undefined), 1000).unref())]);
        if (!counts) return;
        this.reset();
        // An empty queue still says so (zero), rather than leaving the series out.
        for (const c of counts.length ? counts : [{ account: 'default', waiting: 0, running: 0 }]) {
          this.set({ account: c.account, state: 'waiting' }, c.waiting);
          this.set({ account: c.account, state: 'running' }, c.running);
        }
      } catch (err) {
        logger?.warn({ err }, 'metrics: could not read the job queue');
      }
    },
  });
  const startDelay = new Histogram({
    name: 'listsync_job_start_delay_seconds',
    help: 'Time from a job being asked for (a cron fire, an early pull, an operator) to a worker of this process starting it.',
    labelNames: ['account', 'job'] as const,
    buckets: [0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300],
    registers: [registry],
  });
  const retries = new Counter({
    name: 'listsync_job_retries_total',
    help: 'Jobs this process took again after a failure that passes by itself (platform 5xx or timeouts, the database away).',
    labelNames: ['account', 'job'] as const,
    registers: [registry],
  });
  const takenOver = new Counter({
    name: 'listsync_jobs_taken_over_total',
    help: 'Jobs this process took over from a worker that stopped renewing its lease (killed, its machine lost).',
    labelNames: ['account', 'job'] as const,
    registers: [registry],
  });
  void jobs;
  return {
    onRetry(job, over) {
      const labels = { account: job.data.account, job: job.data.job };
      if (over) takenOver.inc(labels);
      else retries.inc(labels);
    },
    onStart(p, seconds) {
      startDelay.observe({ account: p.account, job: p.job }, seconds);
    },
  };
}
