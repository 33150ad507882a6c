/** `listsync status [--list L] [--json]`: a table per list, then changes, conflicts and webhook activity. */
import type { AppContext } from '../context.js';
import { duration, humanNumber, table, timestamp } from '../format.js';
import { realtimeStatuses, type RealtimeStatus } from '../realtime/stats.js';
import { listsMissingSubscriptions } from '../realtime/subscriptions.js';
import { listStatuses, type ListStatus } from '../status.js';
import { budgetAccount } from '../platform/shared-budget.js';
import { readLimiterState, type LimiterState } from '../store/rate-budget.js';
import { latestRun } from '../store/runs.js';
import { webhookActivity, type WebhookActivity } from '../store/webhook-inbox.js';
import { USERS_JOB_LIST } from '../sync/users.js';
import type { CommandKit } from './command-kit.js';
import { LIST_FLAGS } from './options.js';
import { recentSchemaChanges, type RecordedSchemaChange as SchemaChange } from '../store/schema-changes.js';
import { selectLists } from './pull-command.js';

/** What `status` reports, for the lists asked about. */
export interface StatusReport {
  lists: ListStatus[];
  users: { status: string; startedAt: Date; error: string | null } | null;
  schemaChanges: SchemaChange[];
  webhooks: WebhookActivity;
  realtime: (RealtimeStatus & { subscribed: boolean })[];
  /** Per platform account: what the request limiter learned from 429 answers; `current` marks this config's account. */
  requestBudget: (LimiterState & { current: boolean })[];
  /** platform.requestsPerSecond, which the request budget keeps to. */
  requestsPerSecond: number;
  /** Accounts in the config: with more than one, each list's account is shown. */
  accounts: number;
}

export async function gatherStatus(ctx: AppContext, options: { list?: string } = {}): Promise<StatusReport> {
  const config = options.list ? { ...ctx.config, lists: selectLists(ctx, options.list) } : ctx.config;
  const names = new Set(config.lists.map((l) => l.name));
  const users = options.list ? undefined : await latestRun(ctx.db, USERS_JOB_LIST);
  const realtime = await realtimeStatuses(ctx.db, config);
  const missing = new Set(realtime.length ? await listsMissingSubscriptions(ctx.db, config) : []);
  return {
    lists: await listStatuses(ctx.db, config, new Date()),
    users: users ? { status: users.status, startedAt: users.started_at, error: users.error } : null,
    schemaChanges: (await recentSchemaChanges(ctx.db, { limit: 20 })).filter((c) => names.has(c.list)).slice(0, 10),
    webhooks: await webhookActivity(ctx.db),
    realtime: realtime.map((r) => ({ ...r, subscribed: !missing.has(r.list) })),
    requestBudget: await requestBudget(ctx),
    requestsPerSecond: ctx.config.platform.requestsPerSecond,
    accounts: ctx.config.accounts.length,
  };
}

/** Every account's limiter state, this config's accounts first. */
async function requestBudget(ctx: AppContext): Promise<StatusReport['requestBudget']> {
  const mine = new Set(ctx.config.accounts.map((a) => budgetAccount(a.platform)));
  const rows = (await readLimiterState(ctx.db)).map((r) => ({ ...r, current: mine.has(r.account) }));
  return [...rows.filter((r) => r.current), ...rows.filter((r) => !r.current)];
}

/** An account key as shown: a configured name as it is, a derived hash shortened. */
function accountLabel(account: string): string {
  return account.startsWith('sha256:') ? `${account.slice(0, 19)}…` : account;
}

/** What the request limiter learned per account; a warning where 429s kept coming at the widened margin. */
function requestBudgetLines(report: StatusReport): string[] {
  if (report.requestBudget.length === 0) return [];
  const lines = [
    '\nrequest budget (what the limiter learned from 429 answers, per account):',
    table(
      ['account', 'bursts', 'margin', '429s', 'last 429', 'paused until'],
      report.requestBudget.map((b) => [
        `${accountLabel(b.account)}${b.current ? ' (this config)' : ''}`,
        b.burstsAllowed ? 'on' : 'off (evenly spaced)',
        `+${b.marginMs} ms`,
        humanNumber(b.throttledTotal),
        b.lastThrottledAt,
        b.pausedUntil,
      ]),
    ),
  ];
  for (const b of report.requestBudget.filter((x) => x.limitTooHighAt !== null))
    lines.push(
      `${accountLabel(b.account)}: 429s kept coming at the widened margin (${timestamp(b.limitTooHighAt!)}), so the rate was halved: ` +
        `platform.requestsPerSecond${b.current ? ` (${report.requestsPerSecond})` : ''} looks higher than the platform allows; lower it`,
    );
  return lines;
}

export async function runStatus(ctx: AppContext, options: { list?: string } = {}): Promise<string> {
  return statusText(await gatherStatus(ctx, options));
}

function statusText(report: StatusReport, now = new Date()): string {
  const lines: string[] = [];
  // With more than one account, each list's account is the column after its name.
  const withAccount = <T>(row: T[], account: T): T[] => (report.accounts > 1 ? [row[0]!, account, ...row.slice(1)] : row);
  lines.push(
    table(
      withAccount(
        ['list', 'last success', 'watermark', 'lag', 'rows', 'deleted', 'pending', 'failed', 'conflicts', 'last run', 'last error'],
        'account',
      ),
      report.lists.map((l) =>
        withAccount<string | number | Date | null>(
          [
            l.list,
            l.lastSuccessAt,
            l.watermark,
            l.lastPullStartedAt === null ? null : duration(Math.max(0, now.getTime() - l.lastPullStartedAt.getTime())),
            l.rows === null ? null : humanNumber(l.rows),
            l.deletedRows === null ? null : humanNumber(l.deletedRows),
            humanNumber(l.pendingChanges),
            humanNumber(l.failedChanges),
            humanNumber(l.openConflicts),
            l.running ? 'running' : l.resumeFromPage ? `${l.lastRunStatus} (resumes at page ${l.resumeFromPage})` : l.lastRunStatus,
            l.lastError ? truncate(l.lastError, 80) : null,
          ],
          l.account,
        ),
      ),
    ),
  );
  for (const l of report.lists) {
    const h = l.lastReconcileHealed;
    // Deletes marked are reconcile's job; rows missing or behind are what a pull missed.
    if (h && h.missing + h.behind > 0) {
      lines.push(
        `\n${l.list}: the last reconcile (${timestamp(h.at)}) healed ${humanNumber(h.missing)} missing, ${humanNumber(h.behind)} behind row(s) the pulls had not brought in line — check the cursor field, the platform's clock and back-dated edits`,
      );
    }
  }
  const users = report.users;
  if (users)
    lines.push(
      `\nusers: last run ${users.status} at ${timestamp(users.startedAt)}${users.error ? ` — ${truncate(users.error, 160)}` : ''}`,
    );
  lines.push(...schemaChangeLines(report.schemaChanges));
  lines.push(...requestBudgetLines(report));
  const hooks = report.webhooks;
  lines.push(
    `webhooks: ${hooks.subscriptions} subscription(s), ${hooks.eventsLastDay} event(s) in the last day${hooks.lastEventAt ? `, last at ${timestamp(hooks.lastEventAt)}` : ''}`,
  );
  if (report.realtime.length) {
    lines.push(
      '\nreal time:\n' +
        table(
          [
            'list',
            'subscribed',
            'events received',
            'applied',
            'queued',
            're-read (requests)',
            'from body',
            'deletes',
            'last applied',
            'freshness',
          ],
          report.realtime.map((r) => [
            r.list,
            r.subscribed ? 'yes' : 'MISSING (start serve)',
            r.received,
            r.applied,
            r.queued,
            `${r.reread} (${r.rereadRequests})`,
            r.fromBody,
            r.deletesMarked,
            r.lastAppliedAt,
            r.lastLagSeconds === null ? null : `${r.lastLagSeconds.toFixed(2)} s`,
          ]),
        ),
    );
    for (const r of report.realtime.filter((x) => x.lastGapAt !== null))
      lines.push(
        `${r.list}: last gap ${timestamp(r.lastGapAt!)} (${r.lastGapReason ?? 'unknown'}), ${r.caughtUpAt ? `caught up ${timestamp(r.caughtUpAt)} by an incremental pull` : 'not caught up yet'}`,
      );
    for (const r of report.realtime.filter((x) => x.failing > 0))
      lines.push(
        `${r.list}: ${r.failing} item event(s) failed and are retried with backoff; the oldest unapplied waits ${Math.round(r.oldestUnappliedSeconds)} s; last error: ${truncate(r.lastFailure ?? '', 200)}`,
      );
  }
  return lines.join('\n');
}

/** The latest changes listsync saw in the lists' fields. */
function schemaChangeLines(recent: readonly SchemaChange[]): string[] {
  if (recent.length === 0) return [];
  return [
    '\nschema changes (latest first):',
    table(
      ['seen at', 'list', 'kind', 'field', 'column', 'change'],
      recent.map((c) => [c.seenAt, c.list, c.kind, c.field, c.column, truncate(c.message, 100)]),
    ),
  ];
}

function truncate(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

export function register({ program, io, withContext }: CommandKit): void {
  program
    .command('status')
    .description('per list: last success, watermark, lag, rows, pending changes, conflicts, last error')
    .option(LIST_FLAGS, 'only this list')
    .option(
      '--json',
      'the same as one JSON object (lists, users, schemaChanges, webhooks, realtime, requestBudget), for scripts and monitoring',
      false,
    )
    .action((opts: { list?: string; json: boolean }) =>
      withContext(async (ctx) => {
        const report = await gatherStatus(ctx, { list: opts.list });
        io.out(opts.json ? JSON.stringify(report, null, 2) : statusText(report));
      }),
    );
}
