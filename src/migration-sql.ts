/**
 * Where listsync's migrations live, and the one reader of the SQL kept beside
 * them: a function body or other long SQL is `migrations/sql/<migration>/<name>.sql`,
 * read as it is (the build copies `sql/` into `dist/migrations/`:
 * test/package.test.ts). A module of src/, not of migrations/, so the
 * migration source never takes it for a migration.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** src/migration-sql.ts -> ../migrations ; dist/src/migration-sql.js -> ../migrations (compiled alongside). */
export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'migrations');

/** The text of `migrations/sql/<migration>/<name>.sql`, byte for byte. */
export function migrationSql(migration: string, name: string): string {
  return readFileSync(join(MIGRATIONS_DIR, 'sql', migration, `${name}.sql`), 'utf8');
}
