import type { JobDefinition } from './job.js';
import { pullJob } from './pull.js';
import { pushJob } from './push.js';
import { reconcileFullJob, reconcileJob } from './reconcile.js';
import { usersJob } from './users.js';
import { directoryJob } from './directory.js';

export type { JobContext, JobDefinition } from './job.js';

/** Every job `serve` schedules. */
export const jobs: readonly JobDefinition[] = [pullJob, pushJob, reconcileJob, reconcileFullJob, usersJob, directoryJob];
