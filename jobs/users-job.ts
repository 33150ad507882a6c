import { pullUsers } from '../src/sync/users.js';
import type { JobDefinition } from '../src/serve/job-definition.js';

/** The users directory; scheduled by `users.schedule`. Stops after the page in flight. */
export const usersJob: JobDefinition = {
  name: 'users',
  perList: false,
  scheduleOf: (config) => (config.users.enabled ? config.users.schedule : undefined),
  run: (ctx) => pullUsers({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal }),
};
