/** `listsync status`: a table per list, then changes, conflicts and webhook activity. */
import type { AppContext } from '../context.js';
import { duration, table } from '../format.js';
import { listStatuses, webhookStatus } from '../status.js';
import { USERS_JOB_LIST } from '../sync/users.js';

export async function runStatus(ctx: AppContext): Promise<string> {
  const lists = await listStatuses(ctx.db, ctx.config);
  const lines: string[] = [];
  lines.push(
    table(
      ['list', 'last success', 'watermark', 'lag', 'rows', 'deleted', 'pending', 'failed', 'conflicts', 'last run', 'last error'],
      lists.map((l) => [
        l.list,
        l.lastSuccessAt,
        l.watermark,
        l.lagMinutes === null ? null : duration(l.lagMinutes * 60_000),
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
  const users = (await ctx.db('listsync.sync_runs').where({ list_name: USERS_JOB_LIST }).orderBy('id', 'desc').first()) as { status: string; started_at: Date } | undefined;
  if (users) lines.push(`\nusers: last run ${users.status} at ${users.started_at.toISOString()}`);
  const hooks = await webhookStatus(ctx.db);
  lines.push(`webhooks: ${hooks.subscriptions} subscription(s), ${hooks.eventsLastDay} event(s) in the last day${hooks.lastEventAt ? `, last at ${hooks.lastEventAt.toISOString()}` : ''}`);
  return lines.join('\n');
}

function truncate(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}
