/**
 * Postgres connections and listsync's own migrations.
 *
 * Migrations are imported by a small MigrationSource that names them without
 * their extension, so runs from the `.ts` sources (tsx, vitest) and from the
 * compiled `.js` agree on what has been applied. A migration file renamed
 * after a release is recognised under its recorded name (RENAMED_MIGRATIONS).
 */
import { readdirSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { redactUrl } from './config.js';
import { PlatformError } from './platform/platform-errors.js';
import { parseJson } from './platform/json.js';
import { ConfigError, PG, coerceError, pgCode } from './errors.js';
import { MIGRATIONS_DIR } from './migration-sql.js';

export type { Knex };

// pg returns int8 and numeric as strings; listsync's own bigint counters fit in a double.
// Mirror values are read back as text where precision matters (ids are text columns).
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
// Dates ("date" columns) stay 'YYYY-MM-DD' strings: no time zone games.
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v);
// jsonb is exact (numeric), JSON.parse is not: integers beyond 2^53 (19-digit IDs in a file object, in a
// captured change) come back as their digits, as the platform's answers do (src/platform/json.ts).
pg.types.setTypeParser(pg.types.builtins.JSONB, (v: string) => (LONG_DIGITS.test(v) ? parseJson(v) : JSON.parse(v)));

/**
 * A number token of sixteen digits or more (after `:`, `,` or `[`): one JSON.parse may round. Checked before the
 * exact parse, so the usual value (IDs are strings in `_raw`) costs one regex scan more than JSON.parse.
 */
const LONG_DIGITS = /[:,[]\s*-?\d{16}/;

export const OWN_SCHEMA = 'listsync';

export interface DbOptions {
  url: string;
  poolMax?: number;
  /** Connections kept open even when idle (default 0). */
  poolMin?: number;
  applicationName?: string;
  /** Where knex's own warnings go (at debug level); by default nowhere. They never reach the terminal directly. */
  logger?: { debug(obj: object, msg: string): void };
}

export function createDb(options: DbOptions): Knex {
  // knex prints warnings such as "Acquire connection error" with a stack to stdout unless given a logger.
  const toLogger = (level: string) => (message: unknown) =>
    options.logger?.debug({ knex: level }, typeof message === 'string' ? message : JSON.stringify(message));
  return knexFactory({
    client: 'pg',
    connection: { connectionString: options.url, application_name: options.applicationName ?? 'listsync' },
    pool: { min: options.poolMin ?? 0, max: options.poolMax ?? 10 },
    acquireConnectionTimeout: 30_000,
    log: { warn: toLogger('warn'), error: toLogger('error'), deprecate: toLogger('deprecate'), debug: toLogger('debug') },
  });
}

/** Connection-level failures: the server went away, refused, or could not be reached in time. */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
]);
const CONNECTION_ERROR_MESSAGE =
  /Connection terminated|not queryable|Timeout acquiring a connection|connect ECONNREFUSED|server closed the connection|terminating connection/i;

/** True when err (or a cause of it) says the database connection failed, not a statement. */
export function isConnectionError(err: unknown): boolean {
  // The platform client's errors carry transport codes too (ETIMEDOUT...): they are not the database's.
  if (err instanceof PlatformError) return false;
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || code.startsWith('08'))) return true;
    if (e instanceof Error && CONNECTION_ERROR_MESSAGE.test(e.message)) return true;
  }
  return false;
}

/** A connection failure reworded to name the (redacted) database, refused credentials as a ConfigError; any other error as it is. */
export function explainDatabaseError(err: unknown, url: string): unknown {
  const refused = credentialsRefused(err, url);
  if (refused) return refused;
  if (!isConnectionError(err) || (err instanceof Error && err.message.startsWith('The database at '))) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new Error(
    `The database at ${redactUrl(url)} failed: ${message}. Check that PostgreSQL is running and reachable; the run can be repeated.`,
    { cause: err },
  );
}

/**
 * The server's refusal of a login (a wrong password, an unknown role, no CONNECT privilege) as a
 * ConfigError naming the user: the server was reached, and what the operator gave must change (exit 2,
 * never "cannot reach"); undefined for any other error.
 */
export function credentialsRefused(err: unknown, url: string): ConfigError | undefined {
  const code = pgCode(err);
  const refused =
    code === PG.invalidPassword ||
    code === PG.invalidAuthorization ||
    (code === PG.insufficientPrivilege && /permission denied for database/i.test(coerceError(err).message));
  if (!refused) return undefined;
  return new ConfigError(
    `The database at ${redactUrl(url)} refused the credentials of user "${userName(url)}": ${coerceError(err).message}. ` +
      'Fix the user and password in database.url / DATABASE_URL, or the role and its CONNECT privilege on the server.',
    'database.url',
    { cause: err },
  );
}

/** Resolves when the database answers; the error names the (redacted) URL. A database that does not exist, or refused credentials, is a ConfigError. */
export async function ping(db: Knex, url: string): Promise<void> {
  try {
    await db.raw('select 1');
  } catch (err) {
    const refused = credentialsRefused(err, url);
    if (refused) throw refused;
    if (pgCode(err) === PG.invalidCatalogName) {
      const name = databaseName(url);
      throw new ConfigError(
        `The database "${name}" does not exist on the server at ${redactUrl(url)}. Create it (createdb ${name}) or fix database.url / DATABASE_URL.`,
        'database.url',
        { cause: err },
      );
    }
    throw new Error(
      `Cannot reach the database at ${redactUrl(url)}: ${coerceError(err).message}. Check database.url / DATABASE_URL and that PostgreSQL is running.`,
      { cause: err },
    );
  }
}

/** The user a database URL logs in as (libpq's default when it names none: the OS user). */
function userName(url: string): string {
  try {
    return decodeURIComponent(new URL(url).username) || '(none in the URL: the default user)';
  } catch {
    return '?';
  }
}

function databaseName(url: string): string {
  try {
    return decodeURIComponent(new URL(url).pathname.slice(1)) || 'postgres';
  } catch {
    return '?';
  }
}

interface MigrationModule {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** Imports migrations itself and names them without extension (.ts and .js runs agree). */
export class ListsyncMigrationSource implements Knex.MigrationSource<string> {
  constructor(private readonly dir = MIGRATIONS_DIR) {}

  async getMigrations(): Promise<string[]> {
    const names = readdirSync(this.dir)
      .filter((f) => /\.(ts|js|mjs)$/.test(f) && !f.endsWith('.d.ts'))
      .map((f) => f.replace(/\.(ts|js|mjs)$/, ''));
    return [...new Set(names)].sort();
  }

  getMigrationName(migration: string): string {
    return migration;
  }

  async getMigration(migration: string): Promise<Knex.Migration> {
    const files = readdirSync(this.dir);
    const file =
      files.find((f) => f === `${migration}.js`) ??
      files.find((f) => f === `${migration}.ts`) ??
      files.find((f) => f === `${migration}.mjs`);
    if (!file) throw new Error(`Migration ${migration} not found in ${this.dir}`);
    const mod = (await import(pathToFileURL(join(this.dir, file)).href)) as MigrationModule;
    return { up: mod.up, down: mod.down };
  }
}

export const migrationConfig: Knex.MigratorConfig = {
  migrationSource: new ListsyncMigrationSource(),
  schemaName: OWN_SCHEMA,
  tableName: 'knex_migrations',
};

/**
 * Migration files renamed after a release recorded them: the name recorded in knex_migrations → the file's name
 * now. Append a pair when renaming a migration file (never reuse an old name). Before knex compares what it
 * recorded with the files, `migrateLatest` and `migrateRollbackAll` rename the recorded rows, so an upgraded
 * database finds each migration applied under its new name and runs none twice (test/migrations-upgrade.test.ts).
 */
export const RENAMED_MIGRATIONS: Readonly<Record<string, string>> = {
  // Stamps of one width (14 digits): these two had 12.
  '202611260000_schema_evolution': '20261126000000_schema_evolution',
  '202611260300_run_interrupted': '20261126030000_run_interrupted',
};

/** The name a migration has now, for a name a database recorded. */
export function currentMigrationName(recorded: string): string {
  return RENAMED_MIGRATIONS[recorded] ?? recorded;
}

async function migrationsRecorded(db: Knex): Promise<boolean> {
  const exists = await db.raw('select to_regclass(?) as t', [`${OWN_SCHEMA}.knex_migrations`]);
  return (exists.rows as { t: string | null }[])[0]?.t != null;
}

/**
 * Renames recorded rows of renamed migrations, in one transaction. Repeating it changes nothing, and a process
 * that dies before the commit leaves the old names, which the next run renames.
 */
async function renameRecordedMigrations(db: Knex): Promise<void> {
  if (!(await migrationsRecorded(db))) return;
  await db.transaction(async (trx) => {
    for (const [from, to] of Object.entries(RENAMED_MIGRATIONS))
      await trx.withSchema(OWN_SCHEMA).from('knex_migrations').where({ name: from }).update({ name: to });
  });
}

/** Applies pending migrations; returns the names applied (empty when up to date). */
export async function migrateLatest(db: Knex): Promise<string[]> {
  await db.raw('create schema if not exists ??', [OWN_SCHEMA]);
  await renameRecordedMigrations(db);
  const [, applied] = (await db.migrate.latest(migrationConfig)) as [number, string[]];
  return applied;
}

export async function migrateRollbackAll(db: Knex): Promise<string[]> {
  await renameRecordedMigrations(db);
  const [, undone] = (await db.migrate.rollback(migrationConfig, true)) as [number, string[]];
  return undone;
}

/** Migrations not applied yet, read without creating or renaming anything (for `listsync check`). */
export async function pendingMigrations(db: Knex): Promise<string[]> {
  const all = await new ListsyncMigrationSource().getMigrations();
  if (!(await migrationsRecorded(db))) return all;
  const recorded = (await db.withSchema(OWN_SCHEMA).from('knex_migrations').pluck('name')) as string[];
  const applied = new Set(recorded.map(currentMigrationName));
  return all.filter((m) => !applied.has(m));
}

/** listsync's tables are missing or behind this version: every command but `migrate` and `check` stops (exit 2). */
export class NotMigratedError extends ConfigError {
  constructor(readonly pending: readonly string[]) {
    super(
      `listsync's tables ${pending.length === 1 ? 'are 1 migration' : `are ${pending.length} migrations`} behind this version` +
        ` (${pending.length > 3 ? `${pending.slice(0, 3).join(', ')}, ...` : pending.join(', ')}): run \`listsync migrate\` first` +
        ' (or start `listsync serve --migrate`).',
      '(migrations)',
    );
  }
}

/** Throws NotMigratedError unless every migration of this version is applied. */
export async function requireMigrated(db: Knex): Promise<void> {
  const pending = await pendingMigrations(db);
  if (pending.length) throw new NotMigratedError(pending);
}
