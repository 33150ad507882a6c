/** `listsync pull` and `listsync backfill`: the CLI side (progress, summaries). */
import { DateTime } from 'luxon';
import { accountNamed } from '../accounts.js';
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import { UsageError } from '../errors.js';
import { humanNumber, plural } from '../format.js';
import { pullList, type PullMode, type PullResult } from '../sync/pull.js';
import { ListTitles } from '../sync/list-title.js';
import { progressReporter } from './progress.js';
import type { CommandKit } from './command-kit.js';
import { explainJobFailure } from './explain-failure.js';
import { ListOutcomes } from './list-outcomes.js';
import { knownList } from './list-names.js';
import { resumeHint } from './resume-hint.js';
import { jobDeps } from './job-deps.js';
import { listJobOptions } from './options.js';
import { queueInstead, queueOption, refuseWithQueue } from './queue-option.js';

export function selectLists(ctx: Pick<AppContext, 'config'>, name?: string): readonly ListConfig[] {
  if (!name) {
    if (ctx.config.lists.length === 0) throw new UsageError('No lists configured: add one under "lists" in the config.');
    return ctx.config.lists;
  }
  return [knownList(ctx.config, name)];
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

/**
 * Lists pulled at once: each holds its lock's connection and up to `database.pageWriters` while it
 * writes, so as many as the pool holds (at most 4): the next list's requests go out while the last
 * one writes, and the account's budget, not the number of lists, sets the pace.
 */
export function pullConcurrency(config: Pick<AppContext['config'], 'database'>): number {
  return Math.max(1, Math.min(4, Math.floor(config.database.poolMax / (config.database.pageWriters + 1))));
}

export async function runPulls(
  ctx: AppContext,
  lists: readonly ListConfig[],
  mode: PullMode,
  options: { wait: boolean; refreshSchema?: boolean },
): Promise<number> {
  const job = mode.kind === 'incremental' ? 'pull' : 'backfill';
  const groups = byAccount(lists);
  const limit = (account: string): number => accountConcurrency(ctx.config, account, groups.size);
  const concurrent = [...groups].reduce((n, [a, g]) => n + Math.min(g.length, limit(a)), 0);
  // The lists of one pull ask their missing titles once per application (of their account).
  const titles = new Map([...groups.keys()].map((a) => [a, new ListTitles(ctx.clientFor(a), ctx.logger)]));
  // Several bars at once would overwrite each other on a terminal: lists pulled together show their summaries only.
  const quiet = concurrent > 1 && ctx.io.isTTY;
  const pullOne = async (list: ListConfig): Promise<{ out?: string; ok?: boolean; err?: unknown }> => {
    const reporter = quiet ? undefined : progressReporter(ctx, job);
    try {
      const run = () =>
        pullList(
          // Every line of the run names the list and job, those of the table's set-up too.
          {
            ...jobDeps(ctx, list, job, options, (p) => reporter?.onPage(p)),
            titles: titles.get(list.account),
            refreshSchema: options.refreshSchema === true,
            // One list is bound by round trips: its start probes leave with its first page.
            startProbesEarly: lists.length === 1,
          },
          list,
          mode,
        );
      const r = reporter ? await reporter.watch(run) : await run();
      reporter?.stop(r.status === 'succeeded');
      return { out: summary(r), ok: r.status === 'succeeded' };
    } catch (err) {
      reporter?.stop(false);
      return { err };
    }
  };
  // Each account pulls its lists with its own share of the concurrency: a slow or down platform holds its own lists only.
  const byList = new Map<ListConfig, Promise<{ out?: string; ok?: boolean; err?: unknown }>>();
  for (const [account, group] of groups) inOrder(group, limit(account), pullOne).forEach((p, i) => byList.set(group[i]!, p));
  // Summaries come out in the config's order, each as soon as the lists before it are done.
  const outcomes = lists.map((l) => byList.get(l)!);
  const ends = new ListOutcomes(job);
  for (let i = 0; i < lists.length; i++) {
    const o = await outcomes[i]!;
    const list = lists[i]!;
    if (o.out !== undefined) {
      ctx.io.out(o.out);
      ends.record(list.name, 0, o.ok ? 'pulled' : 'stopped');
    } else {
      const { code, reason } = await explainJobFailure(ctx, list, job, o.err);
      ends.record(list.name, code, reason);
      const hint = await resumeHint(ctx, list.name, job);
      if (hint) ctx.io.err(hint);
    }
  }
  return ends.finish(ctx.io);
}

/** The lists by account, each in the given order. */
function byAccount(lists: readonly ListConfig[]): Map<string, ListConfig[]> {
  const groups = new Map<string, ListConfig[]>();
  for (const l of lists) groups.set(l.account, [...(groups.get(l.account) ?? []), l]);
  return groups;
}

/**
 * Lists of one account pulled at once when `accounts` accounts pull together: their share of
 * `pullConcurrency` (rounded up, at least one each), so every account has its lists under way,
 * and never more than the account's `platform.maxConcurrentJobs` (0: no cap).
 */
function accountConcurrency(config: AppContext['config'], account: string, accounts: number): number {
  const share = Math.ceil(pullConcurrency(config) / Math.max(1, accounts));
  const cap = accountNamed(config, account).platform.maxConcurrentJobs;
  return Math.max(1, cap > 0 ? Math.min(share, cap) : share);
}

/** Runs `fn` over `items` with at most `limit` at once, in order; the promises of the results, in the items' order. */
function inOrder<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R>[] {
  const gates: (() => void)[] = [];
  const results = items.map((item, i) => new Promise<void>((open) => (gates[i] = open)).then(() => fn(item)));
  let next = 0;
  const startNext = (): void => {
    if (next < items.length) gates[next++]!();
  };
  for (const r of results) void r.then(startNext, startNext);
  for (let k = 0; k < limit; k++) startNext();
  return results;
}

export function register({ program, withContext }: CommandKit): void {
  queueOption(listJobOptions(program.command('pull').description('one incremental pull of every list (or one): platform -> mirror')))
    .option('--refresh-schema', 'ask the field metadata again even when the kept one is recent (lists[].fieldsMaxAgeMinutes)', false)
    .action((opts: { list?: string; wait: boolean; refreshSchema: boolean; queue: boolean }) => {
      refuseWithQueue(opts, '--refresh-schema', opts.refreshSchema);
      return withContext((ctx) =>
        opts.queue
          ? queueInstead(ctx, 'pull', selectLists(ctx, opts.list))
          : runPulls(ctx, selectLists(ctx, opts.list), { kind: 'incremental' }, { wait: opts.wait, refreshSchema: opts.refreshSchema }),
      );
    });

  queueOption(program.command('backfill'))
    .description('re-read a date range of a list (by its cursor field), with progress; resumable after a crash')
    .requiredOption('-l, --list <name>', 'the list')
    .requiredOption('--from <YYYY-MM-DD>', 'first platform date (inclusive)')
    .option('--to <YYYY-MM-DD>', 'last platform date (inclusive); default: open-ended')
    .option('--wait', 'wait for a run of the same list in another process instead of exiting', false)
    .action((opts: { list: string; from: string; to?: string; wait: boolean; queue: boolean }) => {
      const from = parseDay(opts.from, '--from');
      const to = opts.to === undefined ? undefined : parseDay(opts.to, '--to');
      if (to && to < from) throw new UsageError(`--to ${to} is before --from ${from}.`);
      refuseWithQueue(opts, '--to', to !== undefined);
      return withContext((ctx) =>
        opts.queue
          ? queueInstead(ctx, 'backfill', selectLists(ctx, opts.list), from)
          : runPulls(ctx, selectLists(ctx, opts.list), { kind: 'backfill', from, to }, { wait: opts.wait }),
      );
    });
}
