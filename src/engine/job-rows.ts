/**
 * The statements listsync runs on pg-boss's job table itself (pg-boss 10.4.x,
 * schema `listsync_jobs`), each one atomic, so a worker that dies on the next
 * line leaves every job in a state another worker handles:
 * - `takeNext`: the oldest job due whose scope has no job running and whose
 *   account is under its cap, made active (pg-boss's own fetch would stop the
 *   whole queue behind a job whose key is running); one taker at a time
 *   across workers (test/engine-account-cap.test.ts);
 * - `renew`: a live worker's heartbeat, moving its jobs' expiry on;
 * - `handBack`: a job this worker will not finish, queued again as it was
 *   (not failed, no retry counted), or cancelled when its key already has one
 *   queued (that one does the work);
 * - `refuseRetries`: a failure the operator must fix is not retried.
 */
import type { Knex } from '../db.js';
import { pgCode } from '../errors.js';
import type { JobPayload } from './job-payload.js';
import { JOBS_SCHEMA, QUEUE } from './boss.js';

const JOB = `${JOBS_SCHEMA}.job`;

export interface TakenJob {
  id: string;
  data: JobPayload;
  retryCount: number;
  retryLimit: number;
  createdOn: Date;
  /** What the previous attempt ended with (pg-boss's expiry writes a message here). */
  output: { value?: { message?: string }; message?: string } | null;
}

/** Serialises takes across workers (first key of the two-key advisory lock space: 'lsjt'). */
const TAKE_LOCK_CLASS = 0x6c73_6a74;

const TAKE_NEXT = `with next as (
    select j.id from ${JOB} j
    where j.name = ? and j.state < 'active' and j.start_after < now()
      and not exists (select 1 from ${JOB} a where a.name = j.name and a.state = 'active' and a.data->>'scope' = j.data->>'scope')
      and (coalesce((j.data->>'accountCap')::int, 0) = 0
           or (select count(*) from ${JOB} a where a.name = j.name and a.state = 'active' and a.data->>'account' = j.data->>'account')
              < (j.data->>'accountCap')::int)
    order by j.priority desc, j.created_on, j.id
    limit 1
    for update skip locked)
  update ${JOB} j set state = 'active', started_on = now(),
    retry_count = case when j.started_on is not null then j.retry_count + 1 else j.retry_count end
  from next where j.name = ? and j.id = next.id
  returning j.id, j.data, j.retry_count, j.retry_limit, j.created_on, j.output`;

/**
 * Takes one job due; undefined when none may start now. The cap and the scope
 * are counted from running jobs, which a take running at the same moment
 * cannot see until it commits (READ COMMITTED; skip locked only keeps two
 * takers off the same row): two at once would each find room and start two
 * jobs of a capped account or of one list. So takes queue on a transaction
 * lock, and the statement after it reads every take committed before.
 */
export async function takeNext(db: Knex): Promise<TakenJob | undefined> {
  const rows = await db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(?, hashtext(?))', [TAKE_LOCK_CLASS, QUEUE]);
    return (await trx.raw(TAKE_NEXT, [QUEUE, QUEUE])).rows as Record<string, unknown>[];
  });
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: String(row.id),
    data: row.data as JobPayload,
    retryCount: Number(row.retry_count),
    retryLimit: Number(row.retry_limit),
    createdOn: row.created_on as Date,
    output: row.output as TakenJob['output'],
  };
}

/** Moves the expiry of these running jobs to `leaseSeconds` from now (each its own lease). */
export async function renew(db: Knex, leases: ReadonlyMap<string, number>): Promise<void> {
  if (leases.size === 0) return;
  await db.raw(
    `update ${JOB} j set expire_in = (now() - j.started_on) + make_interval(secs => l.secs)
     from unnest(?::uuid[], ?::int[]) as l(id, secs)
     where j.name = ? and j.id = l.id and j.state = 'active'`,
    [[...leases.keys()], [...leases.values()], QUEUE],
  );
}

/**
 * Queues a running job again, due in `delaySeconds`, with its retry count
 * unchanged; 'joined' when its key already had a job queued (this one is
 * cancelled: the queued one does its work).
 */
export async function handBack(db: Knex, id: string, delaySeconds: number, why: string): Promise<'queued' | 'joined' | 'gone'> {
  try {
    const n = await db.raw(
      `update ${JOB} set state = 'created', started_on = null, start_after = now() + make_interval(secs => ?),
         output = jsonb_build_object('handedBack', ?::text)
       where name = ? and id = ? and state = 'active'`,
      [delaySeconds, why, QUEUE, id],
    );
    return n.rowCount === 1 ? 'queued' : 'gone';
  } catch (err) {
    if (pgCode(err) !== '23505') throw err; // unique_violation: one of its key is queued already
    await db.raw(
      `update ${JOB} set state = 'cancelled', completed_on = now(), output = jsonb_build_object('joined', ?::text)
       where name = ? and id = ? and state = 'active'`,
      [why, QUEUE, id],
    );
    return 'joined';
  }
}

/** A failure the operator must fix: the job's next failure is its last. */
export async function refuseRetries(db: Knex, id: string): Promise<void> {
  await db.raw(`update ${JOB} set retry_limit = retry_count where name = ? and id = ?`, [QUEUE, id]);
}

export interface OpenJob {
  id: string;
  state: 'created' | 'retry' | 'active';
  firedAt: string | undefined;
}

/** The jobs of one key queued, waiting for a retry or running. */
export async function openJobsOf(db: Knex, key: string): Promise<OpenJob[]> {
  const res = await db.raw(
    `select id, state, data->>'firedAt' as fired_at from ${JOB} where name = ? and singleton_key = ? and state <= 'active'`,
    [QUEUE, key],
  );
  return (res.rows as { id: string; state: OpenJob['state']; fired_at: string | null }[]).map((r) => ({
    id: String(r.id),
    state: r.state,
    firedAt: r.fired_at ?? undefined,
  }));
}

/** A job's state and output, wherever it is (the archive keeps finished jobs a week). */
export async function jobState(db: Knex, id: string): Promise<{ state: string; output: unknown } | undefined> {
  const res = await db.raw(
    `select state::text as state, output from ${JOB} where name = ? and id = ?
     union all select state::text, output from ${JOBS_SCHEMA}.archive where name = ? and id = ? limit 1`,
    [QUEUE, id, QUEUE, id],
  );
  return (res.rows as { state: string; output: unknown }[])[0];
}

export interface JobRow {
  id: string;
  state: string;
  job: string;
  list: string | null;
  account: string | null;
  origin: string | null;
  retries: number;
  createdOn: Date;
  startedOn: Date | null;
  completedOn: Date | null;
  /** Why it ended (a failure's message, a hand-back's reason). */
  note: string | null;
}

/** Queued and running jobs, then the most recent finished ones (the archive's too), `limit` in all. */
export async function listJobs(db: Knex, limit: number): Promise<JobRow[]> {
  const cols = `id, state::text as state, data->>'job' as job, data->>'list' as list, data->>'account' as account,
    data->>'origin' as origin, retry_count, created_on, started_on, completed_on,
    coalesce(output->>'message', output->'value'->>'message', output->>'handedBack', output->>'joined', output->>'status') as note`;
  const res = await db.raw(
    `select * from (
       select ${cols} from ${JOB} where name = ?
       union all select ${cols} from ${JOBS_SCHEMA}.archive where name = ?) j
     order by case state when 'active' then 0 when 'retry' then 1 when 'created' then 1 else 2 end,
       coalesce(completed_on, started_on, created_on) desc
     limit ?`,
    [QUEUE, QUEUE, limit],
  );
  return (res.rows as Record<string, unknown>[]).map((r) => ({
    id: String(r.id),
    state: String(r.state),
    job: String(r.job),
    list: (r.list as string | null) ?? null,
    account: (r.account as string | null) ?? null,
    origin: (r.origin as string | null) ?? null,
    retries: Number(r.retry_count),
    createdOn: r.created_on as Date,
    startedOn: (r.started_on as Date | null) ?? null,
    completedOn: (r.completed_on as Date | null) ?? null,
    note: (r.note as string | null) ?? null,
  }));
}

export interface QueueCounts {
  account: string;
  waiting: number;
  running: number;
}

/** Jobs waiting (due or not) and running, per account. */
export async function queueCounts(db: Knex): Promise<QueueCounts[]> {
  const res = await db.raw(
    `select coalesce(data->>'account', 'default') as account,
       count(*) filter (where state < 'active')::int as waiting, count(*) filter (where state = 'active')::int as running
     from ${JOB} where name = ? and state <= 'active' group by 1 order by 1`,
    [QUEUE],
  );
  return res.rows as QueueCounts[];
}

/** A list's jobs queued, waiting for a retry or running, oldest first. */
export async function openJobsOfList(db: Knex, list: string): Promise<{ id: string; job: string; state: string; createdOn: Date }[]> {
  const res = await db.raw(
    `select id::text as id, data->>'job' as job, state::text as state, created_on from ${JOB}
     where name = ? and state <= 'active' and data->>'list' = ? order by created_on`,
    [QUEUE, list],
  );
  return (res.rows as { id: string; job: string; state: string; created_on: Date }[]).map((r) => ({
    id: r.id,
    job: r.job,
    state: r.state,
    createdOn: r.created_on,
  }));
}
