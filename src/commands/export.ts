/**
 * `listsync export dbt-sources [--out FILE]`: the dbt `sources` YAML for the
 * mirror, so a dbt project does not hand-write it. One source (`listsync`,
 * the mirror schema); a table per list with the table's comment as its
 * description and every column (as Postgres has them) with its comment;
 * `loaded_at_field: _synced_at`; freshness from the list's pull schedule
 * (warn after twice its interval, error after `serve.maxLagMinutes`); and
 * `unique` / `not_null` tests on `id`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createTask } from 'node-cron';
import { stringify } from 'yaml';
import type { Config, ListConfig } from '../config.js';
import type { AppContext } from '../context.js';
import type { Knex } from '../db.js';
import { UsageError, coerceError } from '../errors.js';
import { readRegistry } from '../mirror/list-registry.js';
import type { CommandKit } from './command-kit.js';

interface DbtColumn {
  name: string;
  description: string;
  data_tests?: string[];
}

interface DbtFreshnessRule {
  count: number;
  period: 'minute' | 'hour' | 'day';
}

interface DbtTable {
  name: string;
  description: string;
  loaded_at_field: string;
  freshness: { warn_after?: DbtFreshnessRule; error_after: DbtFreshnessRule };
  columns: DbtColumn[];
}

export interface DbtSources {
  version: 2;
  sources: { name: string; description: string; schema: string; tables: DbtTable[] }[];
}

export async function runExportDbtSources(ctx: AppContext, options: { out?: string }): Promise<number> {
  const { doc, missing } = await dbtSources(ctx.db, ctx.config);
  for (const name of missing) ctx.io.err(`listsync: list "${name}" has no mirror table yet (run "listsync pull" first); it is left out.`);
  const text = `# dbt sources for the listsync mirror; written by "listsync export dbt-sources".\n${stringify(doc, { lineWidth: 0 })}`;
  if (options.out === undefined) ctx.io.out(text.trimEnd());
  else {
    try {
      mkdirSync(dirname(resolve(options.out)), { recursive: true });
      writeFileSync(options.out, text);
    } catch (err) {
      throw new UsageError(`Could not write ${options.out}: ${coerceError(err).message}. Choose a writable path for --out.`);
    }
    ctx.io.out(`wrote dbt sources for ${doc.sources[0]!.tables.length} list(s) to ${options.out}`);
  }
  return 0;
}

/** The sources document, and the lists left out because their table does not exist yet. */
export async function dbtSources(db: Knex, config: Config): Promise<{ doc: DbtSources; missing: string[] }> {
  const schema = config.database.schema;
  const tables: DbtTable[] = [];
  const missing: string[] = [];
  for (const list of config.lists) {
    const table = (await readRegistry(db, list.name))?.table ?? list.table ?? list.name;
    const columns = await describedColumns(db, schema, table);
    if (columns.length === 0) {
      missing.push(list.name);
      continue;
    }
    const description = (await tableDescription(db, schema, table)) ?? `listsync mirror of list "${list.name}"`;
    tables.push({
      name: table,
      description,
      loaded_at_field: '_synced_at',
      freshness: freshnessFor(list, config),
      columns: columns.map((c) => ({
        name: c.name,
        description: c.description ?? '',
        ...(c.name === 'id' ? { data_tests: ['unique', 'not_null'] } : {}),
      })),
    });
  }
  return {
    doc: {
      version: 2,
      sources: [{ name: 'listsync', description: `Lists mirrored from the platform by listsync (schema ${schema}).`, schema, tables }],
    },
    missing,
  };
}

async function describedColumns(db: Knex, schema: string, table: string): Promise<{ name: string; description: string | null }[]> {
  const r = (await db.raw(
    `select c.column_name as name, col_description(format('%I.%I', c.table_schema, c.table_name)::regclass, c.ordinal_position::int) as description
       from information_schema.columns c where c.table_schema = ? and c.table_name = ? order by c.ordinal_position`,
    [schema, table],
  )) as { rows: { name: string; description: string | null }[] };
  return r.rows;
}

async function tableDescription(db: Knex, schema: string, table: string): Promise<string | null> {
  const r = (await db.raw(`select obj_description(to_regclass(format('%I.%I', ?::text, ?::text)), 'pg_class') as d`, [schema, table])) as {
    rows: { d: string | null }[];
  };
  return r.rows[0]?.d ?? null;
}

/** Warn after twice the pull interval (when the list has a pull schedule), error after serve.maxLagMinutes. */
export function freshnessFor(list: ListConfig, config: Config): DbtTable['freshness'] {
  const error_after = rule(config.serve.maxLagMinutes);
  const interval = list.schedule.pull === undefined ? undefined : cronIntervalMinutes(list.schedule.pull);
  if (interval === undefined || interval * 2 >= config.serve.maxLagMinutes) return { error_after };
  return { warn_after: rule(interval * 2), error_after };
}

function rule(minutes: number): DbtFreshnessRule {
  if (minutes % 1440 === 0) return { count: minutes / 1440, period: 'day' };
  if (minutes % 60 === 0) return { count: minutes / 60, period: 'hour' };
  return { count: Math.ceil(minutes), period: 'minute' };
}

/** The longest gap between the next runs of a cron expression, in minutes. */
export function cronIntervalMinutes(expression: string): number | undefined {
  const task = createTask(expression, () => undefined);
  try {
    const runs = task.getNextRuns(25);
    let longest = 0;
    for (let i = 1; i < runs.length; i++) longest = Math.max(longest, runs[i]!.getTime() - runs[i - 1]!.getTime());
    return longest > 0 ? Math.ceil(longest / 60_000) : undefined;
  } finally {
    void task.destroy();
  }
}

export function register({ program, withContext }: CommandKit): void {
  const exporter = program.command('export').description('write files other tools read about the mirror');
  exporter
    .command('dbt-sources')
    .description('dbt sources YAML for the mirror: a table per list, columns with descriptions, freshness, tests on id')
    .option('--out <file>', 'write to this file instead of stdout')
    .action((opts: { out?: string }) => withContext((ctx) => runExportDbtSources(ctx, opts)));
}
