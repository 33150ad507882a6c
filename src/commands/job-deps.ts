/**
 * What a list job run from the command line gets from the command's context
 * and its `--wait` option.
 */
import { configForList } from '../accounts.js';
import type { ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import type { JobDeps, PageDone } from '../sync/run-job.js';

/** `--wait`: how long a job waits for a run of the same list in another process. */
const WAIT_MS = 24 * 3_600_000;

/**
 * What a list job run from the command line gets: the context's database
 * and signal, the client and config of the list's account, a logger naming the list and job on every line,
 * and the progress hook.
 */
export function jobDeps(
  ctx: AppContext,
  list: ListConfig,
  job: string,
  options: { wait: boolean },
  onPage: (p: PageDone) => void,
): JobDeps & { onPage: (p: PageDone) => void } {
  return {
    db: ctx.db,
    client: ctx.clientFor(list),
    config: configForList(ctx.config, list),
    logger: ctx.logger.child({ list: list.name, job }),
    waitMs: options.wait ? WAIT_MS : 0,
    signal: ctx.signal,
    onPage,
  };
}
