/**
 * What a scheduled job is: a name, where its schedule comes from, what it runs
 * and how it is asked for. Every job hands the run context's abort signal to
 * its run, which stops at the next safe point (after the page or change in
 * flight) when `serve` shuts down. The jobs themselves are defined in jobs/,
 * built on src/; src/ knows only their shape.
 */
import type { Config, ListConfig } from '../config.js';
import type { Knex } from '../db.js';
import type { Logger } from '../logger.js';
import type { PlatformClient } from '../platform/client.js';

export interface JobContext {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
  /** Aborted on shutdown: runs stop after the page in flight. */
  signal: AbortSignal;
  /** Set for per-list jobs. */
  list?: ListConfig;
  /** A backfill's first day (yyyy-mm-dd), as asked for. */
  from?: string;
}

export interface JobDefinition {
  name: 'pull' | 'push' | 'reconcile' | 'reconcile-full' | 'users' | 'directory' | 'backfill';
  perList: boolean;
  /**
   * A run asked for while one of the same target is running is not started
   * beside it: one more run follows the running one (an early pull asked for
   * by several webhook events runs once after the pull under way).
   */
  coalesce?: boolean;
  /** The cron expression, or undefined when the job is not scheduled. */
  scheduleOf(config: Config, list?: ListConfig): string | undefined;
  run(ctx: JobContext): Promise<unknown>;
}
