import { pullDirectory } from '../src/sync/directory-sync.js';
import type { JobDefinition } from '../src/serve/job-definition.js';

/** Departments, groups and positions; scheduled by `directory.schedule`. Stops between parts; a request in flight is cancelled. */
export const directoryJob: JobDefinition = {
  name: 'directory',
  perList: false,
  scheduleOf: (config) => (config.directory.enabled ? config.directory.schedule : undefined),
  run: (ctx) => pullDirectory({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal }),
};
