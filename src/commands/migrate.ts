import type { Knex } from '../db.js';
import { migrateLatest } from '../db.js';
import type { CommandKit } from './command-kit.js';

/** Applies pending migrations; a second run in a row does nothing. */
export async function runMigrate(db: Knex): Promise<string[]> {
  return migrateLatest(db);
}

export function register({ program, io, withContext }: CommandKit): void {
  program
    .command('migrate')
    .description("apply listsync's own migrations (schema listsync); safe to run repeatedly")
    .action(() =>
      withContext(
        async (ctx) => {
          const applied = await runMigrate(ctx.db);
          io.out(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'already up to date');
        },
        { schema: 'any' },
      ),
    );
}
