/** `listsync reconcile [--list L] [--wait]`: finds items deleted on the platform. Exit 1 when a run failed or refused. */
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { reconcileList, type ReconcileResult } from '../sync/reconcile.js';
import { selectLists } from './pull.js';
import { listJobOptions, reportJobFailure, type CommandKit } from './kit.js';

export function reconcileSummary(r: ReconcileResult): string {
  const head = `${r.list}: reconcile ${r.status === 'succeeded' ? 'succeeded' : r.status === 'refused' ? 'REFUSED' : 'stopped'}`;
  const figures = `saw ${r.seen} IDs in ${r.counters.pages} pages (${r.counters.requests} requests, ${r.counters.retries} retries; platform TotalCount ${r.totalCount}), mirror had ${r.live} live rows`;
  if (r.status !== 'succeeded') return `${head} — ${figures}\n  ${r.message ?? ''}`;
  const heal =
    r.healed.missing + r.healed.behind
      ? `; healed ${r.healed.missing} missing and ${r.healed.behind} behind row(s)` +
        (r.healed.keptLocal ? ` (${r.healed.keptLocal} left to write-back)` : '')
      : '';
  return (
    `${head} — ${figures}; marked deleted ${r.deleted}, undeleted ${r.undeleted}${heal}` +
    (r.confirmedPresent ? ` (${r.confirmedPresent} missed by the sweep were confirmed present)` : '')
  );
}

export async function runReconcile(ctx: AppContext, lists: readonly ListConfig[], options: { wait: boolean }): Promise<number> {
  let code = 0;
  for (const list of lists) {
    try {
      const r = await reconcileList(
        { db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, waitMs: options.wait ? 24 * 3_600_000 : 0 },
        list,
      );
      if (r.status === 'succeeded') ctx.io.out(reconcileSummary(r));
      else {
        ctx.io.err(reconcileSummary(r));
        code = 1;
      }
    } catch (err) {
      code = Math.max(code, await reportJobFailure(ctx, list, 'reconcile', err));
    }
  }
  return code;
}

export function register({ program, withContext }: CommandKit): void {
  listJobOptions(
    program
      .command('reconcile')
      .description('find items deleted on the platform: sweep every ID, mark rows not seen with _deleted_at, undelete rows seen again'),
  ).action((opts: { list?: string; wait: boolean }) =>
    withContext((ctx) => runReconcile(ctx, selectLists(ctx, opts.list), { wait: opts.wait })),
  );
}
