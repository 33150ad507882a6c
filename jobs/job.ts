/** What a scheduled job is: a name, where its schedule comes from, and what it runs. */
import type { Config, ListConfig } from '../src/config.js';
import type { Knex } from '../src/db.js';
import type { Logger } from '../src/logger.js';
import type { PlatformClient } from '../src/platform/client.js';

export interface JobContext {
  db: Knex;
  client: PlatformClient;
  config: Config;
  logger: Logger;
  /** Aborted on shutdown: runs stop after the page in flight. */
  signal: AbortSignal;
  /** Set for per-list jobs. */
  list?: ListConfig;
}

export interface JobDefinition {
  name: 'pull' | 'push' | 'reconcile' | 'users' | 'directory';
  perList: boolean;
  /** The cron expression, or undefined when the job is not scheduled. */
  scheduleOf(config: Config, list?: ListConfig): string | undefined;
  run(ctx: JobContext): Promise<unknown>;
}
