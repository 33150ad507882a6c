import { pullList } from '../src/sync/pull.js';
import type { JobDefinition } from '../src/serve/job-definition.js';

/**
 * A backfill from a day, asked for by an operator (`listsync backfill --queue`, the console's
 * "Backfill from…"), never scheduled. Resumes from its checkpoint when taken over; stops after the page in flight.
 */
export const backfillJob: JobDefinition = {
  name: 'backfill',
  perList: true,
  scheduleOf: () => undefined,
  run: (ctx) =>
    pullList({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal }, ctx.list!, {
      kind: 'backfill',
      from: ctx.from ?? '1970-01-01',
    }),
};
