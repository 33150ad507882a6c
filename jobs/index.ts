import type { JobDefinition } from '../src/serve/job-definition.js';
import { pullJob } from './pull-job.js';
import { pushJob } from './push-job.js';
import { reconcileFullJob, reconcileJob } from './reconcile-job.js';
import { usersJob } from './users-job.js';
import { directoryJob } from './directory-job.js';
import { backfillJob } from './backfill-job.js';

export type { JobContext, JobDefinition } from '../src/serve/job-definition.js';

/** Every job `serve` runs (all but the backfill scheduled). */
export const jobs: readonly JobDefinition[] = [pullJob, pushJob, reconcileJob, reconcileFullJob, usersJob, directoryJob, backfillJob];
