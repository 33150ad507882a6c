/** `listsync directory`: one read of the organization directory. Exit 1 when the run failed. */
import type { AppContext } from '../context.js';
import { UsageError } from '../errors.js';
import { pullDirectory } from '../sync/directory-sync.js';
import type { CommandKit } from './command-kit.js';
import { reportJobFailure } from './explain-failure.js';
import { WAIT_FLAGS } from './options.js';
import { progressReporter } from './progress.js';

export async function runDirectory(ctx: AppContext, options: { wait: boolean }): Promise<number> {
  if (!ctx.config.directory.enabled)
    throw new UsageError(
      'The directory is turned off (directory.enabled is false); set it to true to mirror departments, groups and positions.',
    );
  const reporter = progressReporter(ctx, 'directory', { step: 'tables', item: 'rows' });
  try {
    const r = await pullDirectory({
      onPage: (p) => reporter.onPage(p),
      db: ctx.db,
      client: ctx.client,
      config: ctx.config,
      logger: ctx.logger,
      waitMs: options.wait ? 24 * 3_600_000 : 0,
      signal: ctx.signal,
    });
    reporter.stop(true);
    for (const [table, t] of Object.entries(r.tables)) {
      ctx.io.out(
        `${ctx.config.database.schema}.${table}: inserted ${t.inserted}, updated ${t.updated}, unchanged ${t.unchanged}, removed ${t.deleted}${t.invalid ? `, ${t.invalid} without an ID skipped` : ''}`,
      );
    }
    for (const [part, why] of Object.entries(r.skipped)) ctx.io.err(`${part}: not available on the platform (${why}); skipped`);
    return 0;
  } catch (err) {
    reporter.stop(false);
    return reportJobFailure(ctx, '', 'directory', err);
  }
}

export function register({ program, withContext }: CommandKit): void {
  program
    .command('directory')
    .description('pull the organization directory (departments, groups and their members, positions) into its tables')
    .option(WAIT_FLAGS, 'wait for a directory run in another process instead of exiting', false)
    .action((opts: { wait: boolean }) => withContext((ctx) => runDirectory(ctx, { wait: opts.wait })));
}
