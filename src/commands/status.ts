/** `listsync status`: a table per list, then changes, conflicts and webhook activity. */
import type { AppContext } from '../context.js';
import { duration, table, timestamp } from '../format.js';
import { realtimeStatuses } from '../realtime/stats.js';
import { listsMissingSubscriptions } from '../realtime/subscriptions.js';
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
  const users = (await ctx.db('listsync.sync_runs').where({ list_name: USERS_JOB_LIST }).orderBy('id', 'desc').first()) as { status: string; started_at: Date; error: string | null } | undefined;
  if (users) lines.push(`\nusers: last run ${users.status} at ${timestamp(users.started_at)}${users.error ? ` — ${truncate(users.error, 160)}` : ''}`);
  const hooks = await webhookStatus(ctx.db);
  lines.push(`webhooks: ${hooks.subscriptions} subscription(s), ${hooks.eventsLastDay} event(s) in the last day${hooks.lastEventAt ? `, last at ${timestamp(hooks.lastEventAt)}` : ''}`);
  const realtime = await realtimeStatuses(ctx.db, ctx.config);
  if (realtime.length) {
    const missing = new Set(await listsMissingSubscriptions(ctx.db, ctx.config));
    lines.push(
      '\nreal time:\n' +
        table(
          ['list', 'subscribed', 'events received', 'applied', 'queued', 're-read (requests)', 'from body', 'deletes', 'last applied', 'freshness'],
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
  }
  return lines.join('\n');
}

function truncate(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}
