import { pushList } from '../src/sync/push.js';
import type { JobDefinition } from './job.js';

export const pushJob: JobDefinition = {
  name: 'push',
  perList: true,
  scheduleOf: (_config, list) => list?.schedule.push,
  run: (ctx) => pushList({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger }, ctx.list!),
};
