/** `listsync push`, `listsync sync` and `listsync conflicts`: the CLI side of write-back. */
import type { ConflictPolicy, ListConfig } from '../config.js';
import { configForList } from '../accounts.js';
import type { AppContext } from '../context.js';
import { UsageError } from '../errors.js';
import { plural, table } from '../format.js';
import { getConflict, listConflicts } from '../store/conflicts.js';
import { OUTBOX_TABLE, requeueFailed } from '../store/outbox.js';
import { conflictFields } from '../conflicts/recording.js';
import { settleConflict } from '../conflicts/resolve.js';
import { loadMappingOrExplain, pushList, type PushResult } from '../sync/push.js';
import { previewPush, type PushPreview } from '../sync/push/preview.js';
import { Option } from 'commander';
import { selectLists, runPulls } from './pull-command.js';
import { progressReporter } from './progress.js';
import type { CommandKit } from './command-kit.js';
import { explainJobFailure } from './explain-failure.js';
import { ListOutcomes } from './list-outcomes.js';
import { queueInstead, queueOption, refuseWithQueue } from './queue-option.js';
import { jobDeps } from './job-deps.js';
import { LIST_FLAGS, LIST_HELP, listJobOptions, positiveId } from './options.js';

export function pushSummary(r: PushResult, policy?: ConflictPolicy): string {
  const extra = [r.deleted ? `${r.deleted} deleted` : '', r.withdrawn ? `${r.withdrawn} withdrawn` : ''].filter(Boolean).join(', ');
  return (
    `${r.list}: push — ${r.applied} applied, ${r.created} created, ${extra ? `${extra}, ` : ''}${r.conflicts} conflict(s), ${r.failed} failed, ${r.retrying} left pending with an error; ` +
    `${plural(r.counters.requests, 'request')}, ${plural(r.counters.retries, 'retry', 'retries')}` +
    (r.merged
      ? `\n  ${plural(r.merged, 'field')} only you changed ${r.merged === 1 ? 'was' : 'were'} merged: sent at the platform's newer version, beside the changes made there.`
      : '') +
    (r.conflicts && policy ? `\n  ${conflictOutcome(r, policy)}` : '') +
    (r.failed || r.retrying ? `\n  ${failureHint(r)}` : '') +
    (r.behind
      ? `\n  the mirror is behind the platform for ${plural(r.behind, 'item')} just written: the platform's queries did not show the new version yet; the next pull brings it (versions never go backwards).`
      : '')
  );
}

function failureHint(r: PushResult): string {
  const parts = [];
  if (r.retrying) parts.push(`${r.retrying} change(s) are retried by the next push (after a backoff)`);
  if (r.failed) parts.push(`${r.failed} failed for good: fix the cause, then "listsync push --retry-failed --list ${r.list}"`);
  return `${parts.join('; ')}; "listsync status" and ${OUTBOX_TABLE} (last_error) say why.`;
}

/** What a conflict did to the local edit, how many the policy settled, and where to find them. */
function conflictOutcome(r: PushResult, policy: ConflictPolicy): string {
  const { list, conflicts: n, settledByPolicy: settled } = r;
  const items = n === 1 ? 'an item was' : `${n} items were`;
  const byPolicy = `${settled} of ${plural(n, 'conflict')} settled by policy`;
  if (policy === 'remote-wins')
    return `${items} changed on the platform since your edit, in fields you changed too: ${byPolicy}: the platform's version is kept in the mirror (conflictPolicy remote-wins); your values are saved with the conflict: "listsync conflicts --all --list ${list}" shows them, "conflicts resolve ID --keep local" sends them anyway.`;
  if (policy === 'local-wins')
    return `${items} changed on the platform since your edit, in fields you changed too: ${byPolicy}: your values were sent over the platform's (conflictPolicy local-wins); the platform's values are saved with the conflict: "listsync conflicts --all --list ${list}".`;
  return `${items} changed on the platform since your edit, in fields you changed too: those fields are held, not sent (conflictPolicy manual); settle them with "listsync conflicts --list ${list}", then "conflicts resolve ID --keep local|remote".`;
}

export async function runPushes(
  ctx: AppContext,
  lists: readonly ListConfig[],
  options: { wait: boolean; retryFailed: boolean },
): Promise<number> {
  const outcomes = new ListOutcomes('push');
  for (const list of lists) {
    const reporter = progressReporter(ctx, 'push', { step: 'batches', item: 'changes' });
    try {
      if (options.retryFailed) {
        const n = await requeueFailed(ctx.db, list.name);
        if (n) ctx.io.out(`${list.name}: ${n} failed change(s) queued again`);
      }
      const r = await reporter.watch(() =>
        pushList(
          jobDeps(ctx, list, 'push', options, (p) => reporter.onPage(p)),
          list,
        ),
      );
      reporter.stop(r.failed === 0 && r.retrying === 0);
      ctx.io.out(pushSummary(r, list.conflictPolicy));
      // A scheduler must see a push that delivered less than it tried.
      const short = r.failed > 0 || r.retrying > 0;
      outcomes.record(
        list.name,
        short ? 1 : 0,
        short ? `${r.failed} failed, ${r.retrying} left pending` : `${r.applied} applied, ${r.created} created`,
      );
    } catch (err) {
      reporter.stop(false);
      const { code, reason } = await explainJobFailure(ctx, list, 'push', err);
      outcomes.record(list.name, code, reason);
    }
  }
  return outcomes.finish(ctx.io);
}

/** `push --dry-run`: per change what would be sent and whether it would apply; nothing is written anywhere. */
export async function previewPushes(ctx: AppContext, lists: readonly ListConfig[]): Promise<number> {
  for (const list of lists) {
    const p = await previewPush({ db: ctx.db, client: ctx.clientFor(list), config: configForList(ctx.config, list) }, list);
    ctx.io.out(previewText(p));
  }
  return 0;
}

export function previewText(p: PushPreview): string {
  const show = (v: string | null) => (v === null ? '(none)' : v === '' ? '(empty)' : v);
  const lines = [
    `${p.list}: push --dry-run — ${p.counts.apply} would apply, ${p.counts.conflict} would conflict, ${p.counts.fail} would fail; nothing was sent` +
      (p.counts.conflict ? ` (conflictPolicy ${p.policy}: ${POLICY_EFFECT[p.policy]})` : ''),
  ];
  for (const e of p.entries) {
    const verdict = e.verdict === 'apply' ? 'would apply' : e.verdict === 'conflict' ? 'would conflict' : 'would fail';
    lines.push(
      `change ${e.outboxId}: ${e.op} ${e.op === 'create' ? 'of local row' : 'item'} ${e.target} — ${e.request}, ${verdict}: ${e.reason}`,
    );
    if (e.fields.length && e.op !== 'delete') {
      lines.push(
        indent(
          table(
            ['field', 'column', 'base', 'sent', 'platform now'],
            e.fields.map((f) => [f.field, f.column, show(f.base), show(f.local), show(f.platform)]),
          ),
        ),
      );
    }
  }
  return lines.join('\n');
}

const POLICY_EFFECT: Record<ConflictPolicy, string> = {
  'remote-wins': "the platform's version would be kept and the local change saved with the conflict",
  'local-wins': "the local change would be sent over the platform's version",
  manual: 'the local change would be held for "listsync conflicts resolve"',
};

const indent = (text: string): string =>
  text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');

export async function conflictsTable(ctx: AppContext, options: { list?: string; all: boolean }): Promise<string> {
  const rows = await listConflicts(ctx.db, options);
  if (rows.length === 0 && options.all) return 'no conflicts recorded';
  if (rows.length === 0) {
    const settled = (await listConflicts(ctx.db, { ...options, all: true })).length;
    return settled === 0
      ? 'no open conflicts'
      : `no open conflicts; ${plural(settled, 'conflict')} settled (by policy or by hand): "listsync conflicts --all${options.list ? ` --list ${options.list}` : ''}" shows them.`;
  }
  return table(
    ['id', 'list', 'item', 'policy', 'base', 'remote', 'fields', 'status', 'recorded'],
    rows.map((c) => [
      c.id,
      c.list_name,
      c.item_id,
      c.policy,
      c.base_version,
      c.remote_version,
      c.op === 'delete' ? '(row deleted)' : Object.keys(c.local).join(','),
      c.resolution ? `${c.status}: ${c.resolution}` : c.status,
      c.created_at,
    ]),
  );
}

async function conflictOrExplain(ctx: AppContext, id: number) {
  const c = await getConflict(ctx.db, id);
  if (!c) throw new UsageError(`No conflict with id ${id}; "listsync conflicts" lists the open ones.`);
  const list = ctx.config.lists.find((l) => l.name === c.list_name);
  if (!list) throw new UsageError(`Conflict ${id} belongs to list "${c.list_name}", which is no longer in the config.`);
  return { c, list, mapping: await loadMappingOrExplain(ctx.db, configForList(ctx.config, list), list) };
}

export async function showConflict(ctx: AppContext, id: number): Promise<string> {
  const { c, mapping } = await conflictOrExplain(ctx, id);
  const fields = conflictFields(mapping, c);
  const head = `conflict ${c.id}: list ${c.list_name}, item ${c.item_id}; local ${c.op === 'delete' ? "delete (the row's content below)" : 'change'} made on version ${c.base_version ?? '-'}, platform at ${c.remote_version ?? '-'}; ${c.status}${c.resolution ? ` (${c.resolution})` : ''}`;
  const show = (v: unknown) => (v === null || v === undefined ? '(empty)' : typeof v === 'string' ? v : JSON.stringify(v));
  return `${head}\n${table(
    ['field', 'slot', 'column', 'base', 'local', 'platform'],
    fields.map((f) => [f.name, f.field, f.column, show(f.base), show(f.local), show(f.remote)]),
  )}`;
}

export async function resolveConflictCommand(ctx: AppContext, id: number, keep: 'local' | 'remote'): Promise<string> {
  const { list } = await conflictOrExplain(ctx, id);
  // The conflict is settled through its list's account: its client, its mirror schema.
  return settleConflict({ ...ctx, client: ctx.clientFor(list), config: configForList(ctx.config, list) }, id, keep);
}

export function register({ program, io, withContext }: CommandKit): void {
  queueOption(listJobOptions(program.command('push').description('send pending local changes to the platform, version-checked')))
    .option('--retry-failed', 'queue changes marked failed again before pushing', false)
    .option(
      '--dry-run',
      "read the platform's current versions and print what would be sent, what would apply and what would conflict; send nothing, change nothing",
      false,
    )
    .action((opts: { list?: string; wait: boolean; retryFailed: boolean; dryRun: boolean; queue: boolean }) =>
      withContext((ctx) => {
        if (opts.dryRun && opts.retryFailed)
          throw new UsageError('--dry-run changes nothing, so it cannot be combined with --retry-failed.');
        refuseWithQueue(opts, opts.dryRun ? '--dry-run' : '--retry-failed', opts.dryRun || opts.retryFailed);
        const lists = selectLists(ctx, opts.list);
        if (opts.queue) return queueInstead(ctx, 'push', lists);
        return opts.dryRun ? previewPushes(ctx, lists) : runPushes(ctx, lists, { wait: opts.wait, retryFailed: opts.retryFailed });
      }),
    );

  listJobOptions(program.command('sync').description('push, then pull: one full cycle')).action((opts: { list?: string; wait: boolean }) =>
    withContext(async (ctx) => {
      const lists = selectLists(ctx, opts.list);
      const pushed = await runPushes(ctx, lists, { wait: opts.wait, retryFailed: false });
      const pulled = await runPulls(ctx, lists, { kind: 'incremental' }, { wait: opts.wait });
      return Math.max(pushed, pulled);
    }),
  );

  const listConflicts = (opts: { list?: string; all: boolean }) => withContext(async (ctx) => io.out(await conflictsTable(ctx, opts)));
  const conflicts = program
    .command('conflicts')
    .description('inspect and settle write-back conflicts (default: list the open ones)')
    .option(LIST_FLAGS, LIST_HELP)
    .option('--all', 'include resolved conflicts', false)
    .action(listConflicts);
  conflicts
    .command('list')
    .description('list conflicts')
    .option(LIST_FLAGS, LIST_HELP)
    .option('--all', 'include resolved conflicts', false)
    .action(listConflicts);
  conflicts
    .command('show <id>')
    .description('both sides of a conflict, field by field')
    .action((id: string) => withContext(async (ctx) => io.out(await showConflict(ctx, positiveId(id, 'A conflict id')))));
  conflicts
    .command('resolve <id>')
    .description("settle a conflict: keep the local change (sent at once, at the platform's current version) or the platform's version")
    .addOption(new Option('--keep <side>', 'which side wins').choices(['local', 'remote']).makeOptionMandatory())
    .action((id: string, opts: { keep: 'local' | 'remote' }) =>
      withContext(async (ctx) => io.out(await resolveConflictCommand(ctx, positiveId(id, 'A conflict id'), opts.keep))),
    );
}
