/**
 * `listsync jobs [--limit N] [--json]`: the job queue every serve process
 * shares: jobs running (with the worker, host:pid, running them), queued or
 * waiting for a retry, then the most recent finished ones with their retries
 * and how they ended.
 */
import type { AppContext } from '../context.js';
import { listJobs, type JobRow } from '../engine/job-rows.js';
import { table, timestamp } from '../format.js';
import { workersOfJobs } from '../store/runs.js';
import type { CommandKit } from './command-kit.js';
import { wholeNumber } from './options.js';

export interface JobLine extends JobRow {
  worker: string | null;
}

export async function gatherJobs(ctx: Pick<AppContext, 'db'>, limit: number): Promise<JobLine[]> {
  const rows = await listJobs(ctx.db, limit);
  const workers = await workersOfJobs(
    ctx.db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({ ...r, worker: workers.get(r.id) ?? null }));
}

const STATE_WORDS: Record<string, string> = { created: 'queued', retry: 'retry due', active: 'running' };

export function jobsTable(lines: readonly JobLine[]): string {
  if (lines.length === 0)
    return 'no jobs queued, running or finished recently (serve sends them; pull|push|reconcile|backfill --queue too)';
  return table(
    ['id', 'state', 'job', 'list', 'account', 'worker', 'retries', 'asked', 'started', 'finished', 'note'],
    lines.map((l) => [
      l.id,
      STATE_WORDS[l.state] ?? l.state,
      l.job,
      l.list ?? '-',
      l.account ?? '-',
      l.worker ?? '-',
      l.retries,
      timestamp(l.createdOn),
      l.startedOn ? timestamp(l.startedOn) : '-',
      l.completedOn ? timestamp(l.completedOn) : '-',
      l.note ?? '',
    ]),
  );
}

export function register({ program, io, withContext }: CommandKit): void {
  program
    .command('jobs')
    .description("the job queue serve's workers share: running jobs and their worker, queued ones, then recent ones")
    .option('--limit <n>', 'show at most this many jobs', wholeNumber(1, 10_000, 'a whole number 1-10000'), 50)
    .option('--json', 'print JSON', false)
    .action((opts: { limit: number; json: boolean }) =>
      withContext(async (ctx) => {
        const lines = await gatherJobs(ctx, opts.limit);
        io.out(opts.json ? JSON.stringify(lines, null, 2) : jobsTable(lines));
      }),
    );
}
