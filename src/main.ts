/**
 * The process: runs the command line and sets the exit code. bin/listsync.js
 * calls it with the jobs `serve` schedules (jobs/index.ts): jobs/ is built on
 * src/, so the entry point hands them in and nothing in src/ imports jobs/.
 */
import { main } from './cli.js';
import type { JobDefinition } from './serve/job-definition.js';

export async function run(argv: readonly string[], jobs: readonly JobDefinition[]): Promise<void> {
  process.exitCode = await main(argv, jobs);
}
