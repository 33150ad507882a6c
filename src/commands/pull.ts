/** `listsync pull` and `listsync backfill`: the CLI side (progress, summaries). */
import { DateTime } from 'luxon';
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { UsageError } from '../errors.js';
import { humanNumber, plural } from '../format.js';
import { pullList, type PullMode, type PullResult } from '../sync/pull.js';
import { progressReporter } from './progress.js';
import { jobDeps, listJobOptions, reportJobFailure, type CommandKit } from './kit.js';

export function selectLists(ctx: Pick<AppContext, 'config'>, name?: string): readonly ListConfig[] {
  if (!name) {
    if (ctx.config.lists.length === 0) throw new UsageError('No lists configured: add one under "lists" in the config.');
    return ctx.config.lists;
  }
  const list = ctx.config.lists.find((l) => l.name === name);
  if (!list)
    throw new UsageError(
      `No list named "${name}" in the config; configured: ${ctx.config.lists.map((l) => l.name).join(', ') || '(none)'}.`,
    );
  return [list];
}

export function parseDay(value: string, flag: string): string {
  const d = DateTime.fromFormat(value, 'yyyy-MM-dd');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value) || !d.isValid) throw new UsageError(`${flag} must be a date like 2024-01-31, got "${value}".`);
  return value;
}

export function summary(r: PullResult): string {
  const c = r.counters;
  const n = humanNumber;
  const window = r.windowFrom ? `from ${r.windowFrom}${r.windowTo ? ` to ${r.windowTo}` : ''}` : 'full load';
  return (
    `${r.list}: ${r.status} (${window}${r.resumed ? ', resumed' : ''}) — ${plural(c.pages, 'page')}, ${plural(c.requests, 'request')}, ${plural(c.retries, 'retry', 'retries')}; ` +
    `rows inserted ${n(c.rows_inserted)}, updated ${n(c.rows_updated)}, unchanged ${n(c.rows_unchanged)}, failed values ${n(c.rows_failed)}` +
    (c.rows_skipped_pending ? `, kept local ${n(c.rows_skipped_pending)}` : '') +
    (c.rows_missing_keys ? `, missing keys ${n(c.rows_missing_keys)} (columns kept)` : '') +
    (c.rows_unstorable ? `, text PostgreSQL cannot hold ${n(c.rows_unstorable)} (exact in _raw)` : '') +
    `; watermark ${r.watermark ?? '-'}${r.watermarkHeld ? ` (held: ${r.heldBecause ?? 'an item may have been skipped'})` : ''}` +
    (r.fallback ? `\n  read by the immutable sort field: ${r.fallback}` : '') +
    (r.schemaChanges.length ? `\n  schema: ${r.schemaChanges.join('; ')}` : '')
  );
}

export async function runPulls(ctx: AppContext, lists: readonly ListConfig[], mode: PullMode, options: { wait: boolean }): Promise<number> {
  let code = 0;
  for (const list of lists) {
    const job = mode.kind === 'incremental' ? 'pull' : 'backfill';
    const reporter = progressReporter(ctx, job);
    try {
      const r = await pullList(
        // Every line of the run names the list and job, those of the table's set-up too.
        jobDeps(ctx, list, job, options, (p) => reporter.onPage(p)),
        list,
        mode,
      );
      reporter.stop(r.status === 'succeeded');
      ctx.io.out(summary(r));
    } catch (err) {
      reporter.stop(false);
      code = Math.max(code, await reportJobFailure(ctx, list, job, err));
    }
  }
  return code;
}

export function register({ program, withContext }: CommandKit): void {
  listJobOptions(program.command('pull').description('one incremental pull of every list (or one): platform -> mirror')).action(
    (opts: { list?: string; wait: boolean }) =>
      withContext((ctx) => runPulls(ctx, selectLists(ctx, opts.list), { kind: 'incremental' }, { wait: opts.wait })),
  );

  program
    .command('backfill')
    .description('re-read a date range of a list (by its cursor field), with progress; resumable after a crash')
    .requiredOption('-l, --list <name>', 'the list')
    .requiredOption('--from <YYYY-MM-DD>', 'first platform date (inclusive)')
    .option('--to <YYYY-MM-DD>', 'last platform date (inclusive); default: open-ended')
    .option('--wait', 'wait for a run of the same list in another process instead of exiting', false)
    .action((opts: { list: string; from: string; to?: string; wait: boolean }) => {
      const from = parseDay(opts.from, '--from');
      const to = opts.to === undefined ? undefined : parseDay(opts.to, '--to');
      if (to && to < from) throw new UsageError(`--to ${to} is before --from ${from}.`);
      return withContext((ctx) => runPulls(ctx, selectLists(ctx, opts.list), { kind: 'backfill', from, to }, { wait: opts.wait }));
    });
}
