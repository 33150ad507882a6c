/** `listsync status`: a table per list, then changes, conflicts and webhook activity. */
import type { AppContext } from '../context.js';
import { duration, table, timestamp } from '../format.js';
import { realtimeStatuses } from '../realtime/stats.js';
import { listsMissingSubscriptions } from '../realtime/subscriptions.js';
import { listStatuses } from '../status.js';
import { latestRun } from '../store/runs.js';
import { webhookActivity } from '../store/webhook-inbox.js';
import { USERS_JOB_LIST } from '../sync/users.js';
import type { CommandKit } from './kit.js';
import { recentSchemaChanges } from '../store/schema-changes.js';

export async function runStatus(ctx: AppContext): Promise<string> {
  const now = new Date();
  const lists = await listStatuses(ctx.db, ctx.config, now);
  const lines: string[] = [];
  lines.push(
    table(
      ['list', 'last success', 'watermark', 'lag', 'rows', 'deleted', 'pending', 'failed', 'conflicts', 'last run', 'last error'],
      lists.map((l) => [
        l.list,
        l.lastSuccessAt,
        l.watermark,
        l.lastPullStartedAt === null ? null : duration(Math.max(0, now.getTime() - l.lastPullStartedAt.getTime())),
        l.rows,
        l.deletedRows,
        l.pendingChanges,
        l.failedChanges,
        l.openConflicts,
        l.running ? 'running' : l.resumeFromPage ? `${l.lastRunStatus} (resumes at page ${l.resumeFromPage})` : l.lastRunStatus,
        l.lastError ? truncate(l.lastError, 80) : null,
      ]),
    ),
  );
  for (const l of lists) {
    const h = l.lastReconcileHealed;
    if (h && h.deleted + h.undeleted + h.missing + h.behind > 0) {
      lines.push(
        `\n${l.list}: the last reconcile (${timestamp(h.at)}) healed ${h.missing} missing, ${h.behind} behind, ${h.deleted} deleted, ${h.undeleted} undeleted row(s) the pulls had not brought in line — check the cursor field, the platform's clock and back-dated edits`,
      );
    }
  }
  const users = await latestRun(ctx.db, USERS_JOB_LIST);
  if (users)
    lines.push(
      `\nusers: last run ${users.status} at ${timestamp(users.started_at)}${users.error ? ` — ${truncate(users.error, 160)}` : ''}`,
    );
  lines.push(...(await schemaChangeLines(ctx)));
  const hooks = await webhookActivity(ctx.db);
  lines.push(
    `webhooks: ${hooks.subscriptions} subscription(s), ${hooks.eventsLastDay} event(s) in the last day${hooks.lastEventAt ? `, last at ${timestamp(hooks.lastEventAt)}` : ''}`,
  );
  const realtime = await realtimeStatuses(ctx.db, ctx.config);
  if (realtime.length) {
    const missing = new Set(await listsMissingSubscriptions(ctx.db, ctx.config));
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
          realtime.map((r) => [
            r.list,
            missing.has(r.list) ? 'MISSING (start serve)' : 'yes',
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
    for (const r of realtime.filter((x) => x.failing > 0))
      lines.push(
        `${r.list}: ${r.failing} item event(s) failed and are retried with backoff; the oldest unapplied waits ${Math.round(r.oldestUnappliedSeconds)} s; last error: ${truncate(r.lastFailure ?? '', 200)}`,
      );
  }
  return lines.join('\n');
}

/** The latest changes listsync saw in the lists' fields. */
async function schemaChangeLines(ctx: AppContext): Promise<string[]> {
  const names = new Set(ctx.config.lists.map((l) => l.name));
  const recent = (await recentSchemaChanges(ctx.db, { limit: 20 })).filter((c) => names.has(c.list)).slice(0, 10);
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
    .action(() => withContext(async (ctx) => io.out(await runStatus(ctx))));
}
