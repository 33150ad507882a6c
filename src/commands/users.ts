/** `listsync users`: the users directory into the users table. */
import { plural } from '../format.js';
import { pullUsers } from '../sync/users.js';
import type { CommandKit } from './kit.js';

export function register({ program, io, withContext }: CommandKit): void {
  program
    .command('users')
    .description('pull the users directory (POST /users/search) into the users table')
    .action(() =>
      withContext(async (ctx) => {
        const r = await pullUsers({ db: ctx.db, client: ctx.client, config: ctx.config, logger: ctx.logger });
        io.out(
          `users: ${plural(r.counters.pages, 'page')}; inserted ${r.counters.rows_inserted}, updated ${r.counters.rows_updated}, unchanged ${r.counters.rows_unchanged}`,
        );
      }),
    );
}
