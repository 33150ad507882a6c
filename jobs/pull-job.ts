import { pullSchedule } from '../src/config.js';
import { pullList } from '../src/sync/pull.js';
import type { JobDefinition } from '../src/serve/job-definition.js';

/**
 * Incremental pull; scheduled by `lists[].schedule.pull` (hourly for a real-time list that sets none),
 * and asked for early by webhook events (coalesced). Stops after the page in flight.
 */
export const pullJob: JobDefinition = {
  name: 'pull',
  perList: true,
  coalesce: true,
  scheduleOf: (_config, list) => (list ? pullSchedule(list) : undefined),
  run: (ctx) => pullList({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal }, ctx.list!),
};
