import { fullReconcileSchedule } from '../src/config.js';
import { reconcileList } from '../src/sync/reconcile.js';
import type { JobContext, JobDefinition } from '../src/serve/job-definition.js';

const depsOf = (ctx: JobContext) => ({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal });

/** Finds items deleted on the platform by counts of Created ranges; scheduled by `lists[].schedule.reconcile`. */
export const reconcileJob: JobDefinition = {
  name: 'reconcile',
  perList: true,
  scheduleOf: (_config, list) => (list && 'reconcile' in list.schedule ? list.schedule.reconcile : undefined),
  run: (ctx) => reconcileList(depsOf(ctx), ctx.list!),
};

/**
 * Sweeps every ID: what counts cannot see (versions behind, a delete and a hidden create in one
 * range). Scheduled by `lists[].schedule.reconcileFull`, weekly by default when `reconcile` is scheduled.
 */
export const reconcileFullJob: JobDefinition = {
  name: 'reconcile-full',
  perList: true,
  scheduleOf: (_config, list) => (list ? fullReconcileSchedule(list) : undefined),
  run: (ctx) => reconcileList(depsOf(ctx), ctx.list!, { full: true }),
};
