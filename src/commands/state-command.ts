/**
 * `listsync state LIST`: where each job of a list got to (watermark, high-water mark, checkpoint,
 * last success). `listsync reset LIST`: forgets them so the next pull reads the whole list (the
 * mirror's rows stay; the full read brings every one up to date). Reset asks on a terminal and
 * needs `--yes` elsewhere, and refuses (exit 1) while a run of the list holds its lock: the run
 * would write its checkpoint back. (test/run-trace.test.ts)
 */
import { createInterface } from 'node:readline/promises';
import type { AppContext } from '../context.js';
import { LockedError, UsageError } from '../errors.js';
import { table } from '../format.js';
import { clearListState, readListStates } from '../store/state.js';
import { describeRunning } from '../store/runs.js';
import { LIST_JOBS, acquireLock, listLockName } from '../sync/lock.js';
import type { CommandKit } from './command-kit.js';
import { knownList } from './list-names.js';

export async function stateText(ctx: AppContext, name: string): Promise<string> {
  const list = knownList(ctx.config, name);
  const states = await readListStates(ctx.db, list.name);
  if (states.length === 0) return `${list.name}: no state recorded yet (the next pull reads the whole list)`;
  return table(
    ['job', 'watermark', 'high water', 'checkpoint', 'last success', 'updated'],
    states.map((s) => [s.job, s.watermark, s.highWater, s.checkpoint, s.lastSuccessAt, s.updatedAt]),
  );
}

/** Clears the list's state under its lock; 1 when a run holds it. */
export async function resetList(ctx: AppContext, name: string, yes: boolean): Promise<number> {
  const list = knownList(ctx.config, name);
  if (!yes && !(await confirmed(ctx, `Forget where every job of "${list.name}" got to, so the next pull reads the whole list? [y/N] `)))
    return 0;
  let lock;
  try {
    lock = await acquireLock(ctx.db, listLockName(list.name), { describeHolder: () => describeRunning(ctx.db, list.name, LIST_JOBS) });
  } catch (err) {
    if (!(err instanceof LockedError)) throw err;
    ctx.io.err(
      `listsync: ${list.name} not reset: a run of it is in progress (${err.holder ?? 'in another process'}); run the reset again when it has finished.`,
    );
    return 1;
  }
  try {
    const jobs = await clearListState(ctx.db, list.name);
    ctx.io.out(
      jobs.length
        ? `${list.name}: watermark, high-water mark and checkpoint cleared (${jobs.join(', ')}); the next pull reads the whole list`
        : `${list.name}: no state recorded; the next pull reads the whole list`,
    );
    return 0;
  } finally {
    await lock.release();
  }
}

/** Asks on the terminal; with no terminal to ask on, `--yes` is required (exit 2). */
async function confirmed(ctx: AppContext, question: string): Promise<boolean> {
  if (!ctx.io.isTTY || !process.stdin.isTTY)
    throw new UsageError('reset needs a confirmation: pass --yes (there is no terminal to ask on).');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(question);
    if (/^y(es)?$/i.test(answer.trim())) return true;
    ctx.io.err('listsync: nothing was reset.');
    return false;
  } finally {
    rl.close();
  }
}

export function register({ program, io, withContext }: CommandKit): void {
  program
    .command('state <list>')
    .description("a list's watermark, high-water mark and checkpoint, per job")
    .action((list: string) => withContext(async (ctx) => io.out(await stateText(ctx, list))));
  program
    .command('reset <list>')
    .description("forget a list's watermark, high-water mark and checkpoint, so the next pull reads the whole list")
    .option('-y, --yes', 'do not ask for confirmation (required when not on a terminal)', false)
    .action((list: string, opts: { yes: boolean }) => withContext((ctx) => resetList(ctx, list, opts.yes)));
}
