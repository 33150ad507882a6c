/** `listsync users`: the users directory into the users table. */
import type { AppContext } from '../context.js';
import { plural } from '../format.js';
import { pullUsers } from '../sync/users.js';
import type { CommandKit } from './command-kit.js';
import { reportJobFailure } from './explain-failure.js';

export async function runUsers(ctx: AppContext): Promise<number> {
  try {
    const r = await pullUsers({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger, signal: ctx.signal });
    ctx.io.out(
      `users: ${plural(r.counters.pages, 'page')}; inserted ${r.counters.rows_inserted}, updated ${r.counters.rows_updated}, unchanged ${r.counters.rows_unchanged}`,
    );
    return 0;
  } catch (err) {
    return reportJobFailure(ctx, '', 'users', err);
  }
}

export function register({ program, withContext }: CommandKit): void {
  program
    .command('users')
    .description('pull the users directory (POST /users/search) into the users table')
    .action(() => withContext(runUsers));
}
