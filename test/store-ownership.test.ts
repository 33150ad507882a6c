/**
 * listsync's own tables (schema `listsync`, defined in migrations/) have one
 * owner each: a module under src/store/. Nothing else names a
 * `listsync.<table>` or reaches the schema through `withSchema`, so a table's
 * SQL is found in one place (as pg-boss keeps it in plans.ts). The few
 * exceptions are listed here with their reason.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');
const STORE = 'src/store/';

/** Files outside src/store/ allowed to name own tables, and why. */
const ALLOWED: Record<string, string> = {
  'src/db.ts': 'runs the migrations: creates the schema and reads knex_migrations, the migrator’s own table',
};

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const rel = (file: string): string => relative(ROOT, file).split(sep).join('/');

/** Every table and view the migrations create in the listsync schema (and the migrator's own table). */
function ownTables(): string[] {
  const names = new Set(['knex_migrations']);
  for (const file of walk(join(ROOT, 'migrations'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/createTable\(\s*'([a-z_]+)'/g)) names.add(m[1]!);
    for (const m of text.matchAll(
      /create\s+(?:table|(?:or\s+replace\s+)?view)\s+(?:if\s+not\s+exists\s+)?(?:listsync|\$\{S\})\.([a-z_]+)/gi,
    ))
      names.add(m[1]!);
  }
  return [...names].sort();
}

/** The code of a file without its comments (doc comments may say where data lives). */
function code(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .filter((line) => !line.trim().startsWith('//'))
    .join('\n');
}

/** What in `source` reaches an own table: `listsync.<table>`, `withSchema('listsync')` or `withSchema(OWN_SCHEMA)`. */
function ownTableAccess(source: string, tables: readonly string[]): string[] {
  const named = new RegExp(`\\blistsync\\.(${tables.join('|')})\\b`, 'g');
  const schema = /withSchema\(\s*(?:'listsync'|"listsync"|`listsync`|OWN_SCHEMA)\s*\)/g;
  const body = code(source);
  return [...[...body.matchAll(named)].map((m) => m[0]), ...[...body.matchAll(schema)].map((m) => m[0])];
}

describe('own tables have one owner each', () => {
  const tables = ownTables();
  const files = walk(SRC);

  it('finds the tables the migrations create', () => {
    expect(tables).toEqual(
      expect.arrayContaining([
        'lists',
        'sync_state',
        'sync_runs',
        'outbox',
        'conflicts',
        'webhook_inbox',
        'webhook_subscriptions',
        'leases',
        'rate_budget',
        'schema_changes',
      ]),
    );
  });

  it('flags a table named outside the store, and ignores comments', () => {
    expect(ownTableAccess("await db('listsync.outbox').where({ id })", tables)).toEqual(['listsync.outbox']);
    expect(ownTableAccess("db('lists').withSchema('listsync')", tables)).toEqual(["withSchema('listsync')"]);
    expect(ownTableAccess('select 1 from listsync.sync_runs r', tables)).toEqual(['listsync.sync_runs']);
    expect(ownTableAccess('/** rows in `listsync.outbox` */\n// listsync.sync_runs\nconst x = 1;', tables)).toEqual([]);
    expect(ownTableAccess("set_config('listsync.writer', 'on', true)", tables)).toEqual([]);
  });

  it('no file outside src/store/ (but the listed exceptions) names a listsync table', () => {
    const offenders: string[] = [];
    for (const file of files) {
      const name = rel(file);
      if (name.startsWith(STORE) || name in ALLOWED) continue;
      for (const hit of ownTableAccess(readFileSync(file, 'utf8'), tables)) offenders.push(`${name}: ${hit}`);
    }
    expect(offenders, 'move this SQL into the table’s module under src/store/').toEqual([]);
  });

  it('each exception still needs its exception', () => {
    for (const name of Object.keys(ALLOWED)) expect(ownTableAccess(readFileSync(join(ROOT, name), 'utf8'), tables), name).not.toEqual([]);
  });

  it('each table is named by one store module at most', () => {
    const owners = new Map<string, string[]>();
    for (const file of files.filter((f) => rel(f).startsWith(STORE))) {
      for (const hit of new Set(ownTableAccess(readFileSync(file, 'utf8'), tables)))
        owners.set(hit, [...(owners.get(hit) ?? []), rel(file)]);
    }
    const shared = [...owners].filter(([, by]) => by.length > 1).map(([table, by]) => `${table}: ${by.join(', ')}`);
    expect(shared).toEqual([]);
    expect(owners.get('listsync.outbox')).toEqual(['src/store/outbox-sql.ts']);
    expect(owners.get('listsync.sync_runs')).toEqual(['src/store/runs.ts']);
  });
});
