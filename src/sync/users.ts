/** The users directory: POST /users/search paged into the users mirror table. */
import { ensureUsersTable, upsertUsers } from '../mirror/index.js';
import { runJob, type JobDeps } from './run-job.js';
import { addToRun, zeroCounters, type RunCounters } from '../store/runs.js';
import { completeState } from '../store/state.js';

export const USERS_JOB_LIST = '_users';
const USERS_LOCK = 'users';

/** `signal`: stops after the page in flight; the next run reads the users again. */
export type UsersDeps = JobDeps;

export interface UsersResult {
  runId: number;
  counters: RunCounters;
  stopped: boolean;
}

export async function pullUsers(deps: UsersDeps): Promise<UsersResult> {
  const { db, client, config } = deps;
  const spec = {
    list: USERS_JOB_LIST,
    job: 'users',
    lockName: USERS_LOCK,
    waitMs: deps.waitMs ?? 0,
    holderJobs: ['users'],
    recordSkipped: false,
  } as const;
  return runJob<UsersResult>(deps, spec, async (run) => {
    const { runId, log } = run;
    await ensureUsersTable(db, config.database.schema, config.users.table);
    const counters = zeroCounters();
    let stopped = false;
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
      // Shutdown: stop between pages (a last page completes the run as usual).
      if (deps.signal?.aborted && page.index < page.pageCount) {
        stopped = true;
        break;
      }
    }
    // The rows were counted in each page's transaction; the requests are the wrapper's count.
    Object.assign(counters, run.requests());
    if (stopped) {
      log.warn(counters, 'users stopped by shutdown after a complete page');
      return {
        outcome: { status: 'failed', error: 'stopped by shutdown; the next run reads the users again' },
        result: { runId, counters, stopped },
      };
    }
    await db.transaction(async (trx) => {
      await completeState(trx, USERS_JOB_LIST, 'users', null);
      await run.settle(trx, { status: 'succeeded' });
    });
    log.info(counters, 'users finished');
    return { outcome: { status: 'succeeded' }, result: { runId, counters, stopped } };
  });
}
