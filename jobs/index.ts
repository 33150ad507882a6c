import type { JobDefinition } from '../src/serve/job-definition.js';
import { pullJob } from './pull.js';
import { pushJob } from './push.js';
import { reconcileFullJob, reconcileJob } from './reconcile.js';
import { usersJob } from './users.js';
import { directoryJob } from './directory-job.js';

export type { JobContext, JobDefinition } from '../src/serve/job-definition.js';

/** Every job `serve` schedules. */
export const jobs: readonly JobDefinition[] = [pullJob, pushJob, reconcileJob, reconcileFullJob, usersJob, directoryJob];
