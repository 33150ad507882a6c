/**
 * `listsync runs [--list L] [--failed] [--since WHEN] [--limit N]`: the run history, newest first;
 * `listsync runs show ID`: one run's row and its trace (plan, requests, retries, pages, errors in
 * order). (test/run-trace.test.ts)
 */
import { InvalidArgumentError } from 'commander';
import type { AppContext } from '../context.js';
import { UsageError } from '../errors.js';
import { readRunEvents } from '../store/run-events.js';
import { getRun, listRuns } from '../store/run-history.js';
import type { CommandKit } from './command-kit.js';
import { LIST_FLAGS, positiveId, wholeNumber } from './options.js';
import { runText, runsTable } from './run-trace-text.js';

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: a duration back from now (`30m`, `24h`, `7d`), a date (`2026-11-27`) or an ISO instant. */
export function parseSince(value: string, now = Date.now()): Date {
  const ago = /^(\d+)([mhd])$/.exec(value);
  if (ago) return new Date(now - Number(ago[1]) * UNITS[ago[2]!]!);
  const at = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T00:00:00Z`) : new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(at.getTime()))
    throw new InvalidArgumentError('a duration back from now (30m, 24h, 7d), a date (2026-11-27, UTC) or an ISO time');
  return at;
}

async function showRun(ctx: AppContext, id: number): Promise<string> {
  const run = await getRun(ctx.db, id);
  if (!run) throw new UsageError(`No run with id ${id}; "listsync runs" lists the recorded ones.`);
  return runText(run, await readRunEvents(ctx.db, id));
}

export function register({ program, io, withContext }: CommandKit): void {
  const runs = program
    .command('runs')
    .description('the run history, newest first (runs show ID: one run with its trace)')
    .option(LIST_FLAGS, 'only runs of this list')
    .option('--failed', 'only failed runs', false)
    .option('--since <when>', 'only runs started since: 30m, 24h, 7d, a date (UTC) or an ISO time', (v) => parseSince(v))
    .option('--limit <n>', 'at most this many runs (default 50)', wholeNumber(1, 100_000), 50)
    .action((opts: { list?: string; failed: boolean; since?: Date; limit: number }) =>
      withContext(async (ctx) => {
        io.out(runsTable(await listRuns(ctx.db, opts)));
      }),
    );
  runs
    .command('show <id>')
    .description("one run: its row and its trace (plan, requests and retries with the platform's answers, pages, errors) in order")
    .action((id: string) => withContext(async (ctx) => io.out(await showRun(ctx, positiveId(id, 'A run id')))));
}
