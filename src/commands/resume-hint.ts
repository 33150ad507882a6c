/**
 * After a failed pull or backfill: when the run left a checkpoint past its first page, the pages it
 * wrote are kept and the next run carries on from there; say so, and how. When nothing was
 * committed (a 401 on the very first request) nothing is claimed. Asked of the database, not
 * guessed from the error. (test/terminal-failure.test.ts)
 */
import type { AppContext } from '../context.js';
import { readState } from '../store/state.js';

export async function resumeHint(ctx: Pick<AppContext, 'db'>, list: string, job: string): Promise<string | undefined> {
  const state = await readState<{ nextPage?: unknown }>(ctx.db, list, job).catch(() => undefined);
  const next = state?.checkpoint?.nextPage;
  if (typeof next !== 'number' || next <= 1) return undefined;
  const again = job === 'pull' ? `"listsync pull --list ${list}"` : 'the same backfill';
  return `${list}: the ${next - 1} page(s) written are kept (checkpoint): run ${again} again to carry on from page ${next}.`;
}
