/**
 * Putting jobs on the queue. A cron fire (`fire`) coalesces: when its key has
 * a job queued, waiting for a retry or running, nothing is sent and the fire
 * is skipped with the reason, unless that job is this very fire sent by
 * another replica (same instant), which is no skip at all. A fire's job id is
 * derived from its key and instant, so N replicas firing the same minute
 * make one job even when the first one's job has already finished. Anything else (`request`: an early pull, the
 * real-time catch-up, an operator) joins the job of its key already queued,
 * or queues one to follow the running one (the queue is `stately`: one queued
 * and one running per key, so two senders at once still make one job).
 */
import { createHash } from 'node:crypto';
import type PgBoss from 'pg-boss';
import type { Knex } from '../db.js';
import { QUEUE } from './boss.js';
import { jobKey, type JobPayload } from './job-payload.js';
import { jobState, openJobsOf } from './job-rows.js';

export type FireResult = { sent: string } | { sameFire: string } | { coalesced: string };

export interface SendOptions {
  leaseSeconds: number;
  retryLimit: number;
  retryDelaySeconds: number;
}

export interface Enqueuer {
  fire(payload: JobPayload): Promise<FireResult>;
  /** The id of the job queued for the payload's key (sent now, or the one already queued). */
  request(payload: JobPayload): Promise<string>;
}

export function createEnqueuer(boss: PgBoss, db: Knex, options: (payload: JobPayload) => SendOptions): Enqueuer {
  const send = (payload: JobPayload, id?: string): Promise<string | null> => {
    const o = options(payload);
    return boss.send(QUEUE, payload, {
      ...(id ? { id } : {}),
      singletonKey: jobKey(payload.job, payload.list),
      expireInSeconds: o.leaseSeconds,
      retryLimit: o.retryLimit,
      retryDelay: o.retryDelaySeconds,
      retryBackoff: true,
    });
  };

  async function coalescedWith(payload: JobPayload): Promise<FireResult | undefined> {
    const open = await openJobsOf(db, jobKey(payload.job, payload.list));
    const same = open.find((j) => j.firedAt === payload.firedAt);
    if (same) return { sameFire: same.id };
    if (open.some((j) => j.state !== 'active')) return { coalesced: 'coalesced: the previous fire is still queued' };
    if (open.length) return { coalesced: 'coalesced: the previous run is still running' };
    return undefined;
  }

  return {
    async fire(payload) {
      const before = await coalescedWith(payload);
      if (before) return before;
      const fireId = fireJobId(payload);
      const id = await send(payload, fireId);
      if (id) return { sent: id };
      // Another sender won the race: its job is this fire (another replica) or an earlier one.
      if (await jobState(db, fireId)) return { sameFire: fireId };
      return (await coalescedWith(payload)) ?? { coalesced: 'coalesced: the previous fire is still queued' };
    },
    async request(payload) {
      for (let attempt = 0; attempt < 3; attempt++) {
        const queued = (await openJobsOf(db, jobKey(payload.job, payload.list))).find((j) => j.state !== 'active');
        if (queued) return queued.id;
        const id = await send(payload);
        if (id) return id;
      }
      throw new Error(`could not queue ${jobKey(payload.job, payload.list)}: its queued job kept changing; try again`);
    },
  };
}

/** The id of a cron fire's job: the same on every replica for one key and instant (a UUID-shaped hash). */
export function fireJobId(payload: JobPayload): string {
  const h = createHash('sha256')
    .update(`${payload.job}:${payload.list ?? ''}@${payload.firedAt}`)
    .digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
