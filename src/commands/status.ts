/** `listsync status`: a table per list, then changes, conflicts and webhook activity. */
import type { AppContext } from '../context.js';
import { duration, table, timestamp } from '../format.js';
import { listStatuses, webhookStatus } from '../status.js';
import { USERS_JOB_LIST } from '../sync/users.js';

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
  const users = (await ctx.db('listsync.sync_runs').where({ list_name: USERS_JOB_LIST }).orderBy('id', 'desc').first()) as { status: string; started_at: Date; error: string | null } | undefined;
  if (users) lines.push(`\nusers: last run ${users.status} at ${timestamp(users.started_at)}${users.error ? ` — ${truncate(users.error, 160)}` : ''}`);
  const hooks = await webhookStatus(ctx.db);
  lines.push(`webhooks: ${hooks.subscriptions} subscription(s), ${hooks.eventsLastDay} event(s) in the last day${hooks.lastEventAt ? `, last at ${timestamp(hooks.lastEventAt)}` : ''}`);
  return lines.join('\n');
}

function truncate(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}
