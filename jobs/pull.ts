import { pullList } from '../src/sync/pull.js';
import type { JobDefinition } from './job.js';

export const pullJob: JobDefinition = {
  name: 'pull',
  perList: true,
  scheduleOf: (_config, list) => list?.schedule.pull,
  run: (ctx) => pullList({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal }, ctx.list!),
};
