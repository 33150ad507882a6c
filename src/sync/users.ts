/** The users directory: POST /users/search paged into the users mirror table. */
import type { Config } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';
import { ensureUsersTable, upsertUsers } from '../mirror/index.js';
import { withLock } from './lock.js';
import { addToRun, closeAbandonedRuns, finishRun, startRun, zeroCounters, type RunCounters } from './runs.js';
import { completeState } from './state.js';

export const USERS_JOB_LIST = '_users';
const USERS_LOCK = 'users';

export async function pullUsers(deps: { db: Knex; client: PlatformClient; config: Config; logger: Logger; waitMs?: number }): Promise<{ runId: number; counters: RunCounters }> {
  const { db, client, config } = deps;
  return withLock(db, USERS_LOCK, { waitMs: deps.waitMs ?? 0 }, async () => {
    await closeAbandonedRuns(db, USERS_JOB_LIST, ['users']);
    await ensureUsersTable(db, config.database.schema, config.users.table);
    const runId = await startRun(db, USERS_JOB_LIST, 'users');
    const log = deps.logger.child({ job: 'users', runId });
    const counters = zeroCounters();
    const before = client.stats();
    try {
      for await (const page of client.userPages({ pageSize: 1000 })) {
        const r = await db.transaction(async (trx) => {
          const res = await upsertUsers(trx, config.database.schema, config.users.table, page.items);
          await addToRun(trx, runId, { pages: 1, rows_inserted: res.inserted, rows_updated: res.updated, rows_unchanged: res.unchanged });
          return res;
        });
        counters.pages++;
        counters.rows_inserted += r.inserted;
        counters.rows_updated += r.updated;
        counters.rows_unchanged += r.unchanged;
      }
      const after = client.stats();
      counters.requests = after.requests - before.requests;
      counters.retries = after.retries - before.retries;
      await db.transaction(async (trx) => {
        await completeState(trx, USERS_JOB_LIST, 'users', null);
        await finishRun(trx, runId, 'succeeded', { counters: { requests: counters.requests, retries: counters.retries } });
      });
      log.info(counters, 'users finished');
      return { runId, counters };
    } catch (err) {
      await finishRun(db, runId, 'failed', { error: (err as Error).message });
      log.error({ err }, 'users failed');
      throw err;
    }
  });
}

