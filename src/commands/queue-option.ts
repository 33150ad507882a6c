/**
 * `--queue` on pull, push, reconcile and backfill: the run is handed to serve's
 * workers through the job queue every serve process shares, and the job's id
 * is printed (one line per list), instead of running here. A job queued while
 * no worker runs waits for the first one to start; it joins a job of the same
 * list and kind already queued (`listsync jobs` shows them).
 */
import type { Command } from 'commander';
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import type { JobKind } from '../engine/job-payload.js';
import { queueJobs } from '../engine/job-request.js';
import { UsageError } from '../errors.js';

export const QUEUE_FLAGS = '--queue';
export const QUEUE_HELP = "hand the run to serve's workers (the job queue) and print the job's id, instead of running it here";

export function queueOption(cmd: Command): Command {
  return cmd.option(QUEUE_FLAGS, QUEUE_HELP, false);
}

/** Queues `job` for each list; prints `queued <job> of <list>: job <id>`; exit code 0. */
export async function queueInstead(ctx: AppContext, job: JobKind, lists: readonly ListConfig[], from?: string): Promise<number> {
  const ids = await queueJobs(
    ctx,
    lists.map((list) => ({ job, list, from })),
  );
  lists.forEach((list, i) => ctx.io.out(`queued ${job} of ${list.name}: job ${ids[i]}`));
  return 0;
}

/** `--queue` with an option that only a run here can honour. */
export function refuseWithQueue(opts: { queue?: boolean }, flag: string, given: boolean): void {
  if (opts.queue && given) throw new UsageError(`${flag} applies to a run here; it cannot be combined with --queue.`);
}
