import { pushList } from '../src/sync/push.js';
import type { JobDefinition } from '../src/serve/job-definition.js';

/** Write-back; scheduled by `lists[].schedule.push`. Stops after the changes in flight; the rest stay pending for the next push. */
export const pushJob: JobDefinition = {
  name: 'push',
  perList: true,
  scheduleOf: (_config, list) => list?.schedule.push,
  run: (ctx) => pushList({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal }, ctx.list!),
};
