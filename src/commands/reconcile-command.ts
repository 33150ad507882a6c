/**
 * `listsync reconcile [--list L] [--full] [--wait]`: finds items deleted on the platform, by counts
 * of Created ranges (default) or by sweeping every ID (`--full`). Exit 1 when a run failed or refused.
 */
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { humanNumber, plural } from '../format.js';
import { progressReporter } from './progress.js';
import { reconcileList, type ReconcileResult } from '../sync/reconcile.js';
import { selectLists } from './pull-command.js';
import type { CommandKit } from './command-kit.js';
import { explainJobFailure } from './explain-failure.js';
import { ListOutcomes } from './list-outcomes.js';
import { queueInstead, queueOption } from './queue-option.js';
import { jobDeps } from './job-deps.js';
import { listJobOptions } from './options.js';

export function reconcileSummary(r: ReconcileResult): string {
  const status = r.status === 'succeeded' ? 'succeeded' : r.status === 'refused' ? 'REFUSED' : 'stopped';
  const head = `${r.list}: reconcile ${r.mode === 'full' ? '(full sweep)' : '(by counts)'} ${status}`;
  const n = humanNumber;
  const sweep = `saw ${n(r.seen)} IDs in ${plural(r.counters.pages, 'page')} (${plural(r.counters.requests, 'request')}, ${plural(r.counters.retries, 'retry', 'retries')}; platform TotalCount ${n(r.totalCount)}), mirror had ${n(r.live)} live rows`;
  const figures = r.counts
    ? `${n(r.counts.requests)} count request(s), ${r.counts.swept.length ? `swept ${describeSwept(r.counts.swept)}` : 'every count agreed'}; ${sweep}`
    : sweep;
  if (r.status !== 'succeeded') return `${head} — ${figures}\n  ${r.message ?? ''}`;
  const heal =
    r.healed.missing + r.healed.behind
      ? `; healed ${n(r.healed.missing)} missing and ${n(r.healed.behind)} behind row(s)` +
        (r.healed.keptLocal ? ` (${n(r.healed.keptLocal)} left to write-back)` : '')
      : '';
  return (
    `${head} — ${figures}; marked deleted ${n(r.deleted)}, undeleted ${n(r.undeleted)}${heal}` +
    (r.confirmedPresent ? ` (${n(r.confirmedPresent)} missed by the sweep were confirmed present)` : '')
  );
}

function describeSwept(ranges: readonly string[]): string {
  const shown = ranges.slice(0, 5).join(', ');
  return `${ranges.length} range(s) (${shown}${ranges.length > 5 ? `, and ${ranges.length - 5} more` : ''})`;
}

export async function runReconcile(
  ctx: AppContext,
  lists: readonly ListConfig[],
  options: { wait: boolean; full: boolean },
): Promise<number> {
  const outcomes = new ListOutcomes('reconcile');
  for (const list of lists) {
    const reporter = progressReporter(ctx, 'reconcile');
    try {
      const r = await reporter.watch(() =>
        reconcileList(
          jobDeps(ctx, list, 'reconcile', options, (p) => reporter.onPage(p)),
          list,
          { full: options.full },
        ),
      );
      reporter.stop(r.status === 'succeeded');
      if (r.status === 'succeeded') ctx.io.out(reconcileSummary(r));
      else ctx.io.err(reconcileSummary(r));
      outcomes.record(list.name, r.status === 'succeeded' ? 0 : 1, r.status === 'succeeded' ? 'reconciled' : (r.message ?? r.status));
    } catch (err) {
      reporter.stop(false);
      const { code, reason } = await explainJobFailure(ctx, list, 'reconcile', err);
      outcomes.record(list.name, code, reason);
    }
  }
  return outcomes.finish(ctx.io);
}

export function register({ program, withContext }: CommandKit): void {
  queueOption(
    listJobOptions(
      program
        .command('reconcile')
        .description(
          'find items deleted on the platform: compare counts of Created ranges and sweep the IDs of the ranges that differ (--full: every ID); mark rows not seen with _deleted_at, undelete rows seen again',
        )
        .option('--full', 'sweep every ID of the list (also heals rows whose version is behind anywhere in the list)', false),
    ),
  ).action((opts: { list?: string; wait: boolean; full: boolean; queue: boolean }) =>
    withContext((ctx) =>
      opts.queue
        ? queueInstead(ctx, opts.full ? 'reconcile-full' : 'reconcile', selectLists(ctx, opts.list))
        : runReconcile(ctx, selectLists(ctx, opts.list), { wait: opts.wait, full: opts.full }),
    ),
  );
}
