/**
 * pg-boss (pinned to 10.4.x: 11 and later need Node 22) on listsync's own
 * work pool: every statement it runs borrows a connection of the knex pool and
 * gives it back at once, so the engine adds no pool of its own and never
 * holds a connection while it waits. Its tables live in the schema
 * `listsync_jobs` (created by `listsync migrate`, migrations/20261130060000_job_engine.ts);
 * all of listsync's jobs share one `stately` queue, `listsync`.
 */
import PgBoss from 'pg-boss';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';

export const JOBS_SCHEMA = 'listsync_jobs';
export const QUEUE = 'listsync';

/** pg-boss's `db` option over a knex pool: one pooled connection per statement. */
export function knexExecutor(db: Knex): PgBoss.Db {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      const conn = (await db.client.acquireConnection()) as { query(t: string, v: unknown[]): Promise<{ rows: unknown[] }> };
      try {
        return await conn.query(text, values);
      } finally {
        await db.client.releaseConnection(conn);
      }
    },
  } as PgBoss.Db;
}

export interface BossOptions {
  /** Run pg-boss's supervision (expiring jobs of dead workers, archiving, retention): workers do, a CLI enqueue does not. */
  supervise: boolean;
  /** How often supervision runs (seconds); a dead worker's job is taken over within its lease plus this. */
  superviseSeconds?: number;
  logger: Logger;
}

/** A started pg-boss on `db`; its errors are logged, never thrown at the process. */
export async function startBoss(db: Knex, opts: BossOptions): Promise<PgBoss> {
  const boss = new PgBoss({
    db: knexExecutor(db),
    schema: JOBS_SCHEMA,
    supervise: opts.supervise,
    schedule: false,
    migrate: opts.supervise,
    maintenanceIntervalSeconds: opts.superviseSeconds ?? 30,
    // Finished jobs move to the archive after a day and leave it after a week: `listsync jobs` shows recent ones.
    archiveCompletedAfterSeconds: 24 * 3600,
    archiveFailedAfterSeconds: 24 * 3600,
    deleteAfterDays: 7,
  });
  boss.on('error', (err: Error) => opts.logger.warn({ err }, 'job engine: supervision failed; it tries again'));
  await boss.start();
  return boss;
}
