import { reconcileList } from '../src/sync/reconcile.js';
import type { JobDefinition } from './job.js';

/** Finds items deleted on the platform; scheduled by `lists[].schedule.reconcile`. */
export const reconcileJob: JobDefinition = {
  name: 'reconcile',
  perList: true,
  scheduleOf: (_config, list) => (list && 'reconcile' in list.schedule ? list.schedule.reconcile : undefined),
  run: (ctx) => reconcileList({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal }, ctx.list!),
};
