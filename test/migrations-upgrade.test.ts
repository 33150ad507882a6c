/**
 * A database migrated by the previous release upgrades in place with
 * `listsync migrate` (test/fixtures/migrations/previous-release.sql: a dump
 * made by the migrations as they were, two of them recorded under 12-digit
 * stamps since renamed). Every row, the webhook subscription and both pending
 * changes are kept, no migration runs twice, and the capture trigger still
 * captures an edit. The renaming is src/db.ts › RENAMED_MIGRATIONS.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListsyncMigrationSource, RENAMED_MIGRATIONS, pendingMigrations } from '../src/db.js';
import { runCli } from './helpers/cli.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

const DUMP = join(import.meta.dirname, 'fixtures', 'migrations', 'previous-release.sql');
const EDITED_ITEM = '1860224032679657597';

/** Loads the dump on a connection of its own (it sets search_path for its session). */
async function restore(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(readFileSync(DUMP, 'utf8'));
  } finally {
    await client.end();
  }
}

type Rows = Record<string, unknown>[];

describe('upgrade from the previous release', () => {
  let t: TestDatabase;
  let dir: string;
  let config: string;

  beforeAll(async () => {
    t = await createTestDatabase({ migrated: false });
    await restore(t.url);
    dir = mkdtempSync(join(tmpdir(), 'listsync-upgrade-'));
    config = join(dir, 'listsync.config.json');
    writeFileSync(
      config,
      JSON.stringify({
        platform: { baseUrl: 'http://127.0.0.1:9/v1' },
        database: { url: t.url },
        lists: [{ name: 'orders', appID: 'demo', listID: 'orders' }],
      }),
    );
  });
  afterAll(async () => {
    await t?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const snapshot = async () => ({
    mirror: (await t.db('mirror.orders').select('id', 'row_version', 'title', 'notes', '_raw').orderBy('id')) as Rows,
    outbox: (await t.db.raw('select * from listsync.outbox order by id')).rows as Rows,
    subscriptions: (await t.db.raw('select * from listsync.webhook_subscriptions order by id')).rows as Rows,
    lists: (await t.db.raw('select * from listsync.lists order by name')).rows as Rows,
    runs: (await t.db.raw('select * from listsync.sync_runs order by id')).rows as Rows,
  });

  it('recognises the renamed migrations as applied, keeps every row, and still captures an edit', async () => {
    const recorded = async () =>
      (await t.db.raw('select name from listsync.knex_migrations order by id')).rows.map((r: { name: string }) => r.name) as string[];
    const before = await snapshot();
    const namesBefore = await recorded();
    for (const old of Object.keys(RENAMED_MIGRATIONS)) expect(namesBefore).toContain(old);
    expect(before.outbox.filter((o) => o.status === 'pending').map((o) => o.op)).toEqual(['update', 'create']);
    expect(before.subscriptions).toHaveLength(1);
    expect(before.mirror).toHaveLength(6);
    // `check` reads the old names as the renamed migrations, without writing anything.
    const all = await new ListsyncMigrationSource().getMigrations();
    const pending = await pendingMigrations(t.db);
    expect(pending.some((m) => Object.values(RENAMED_MIGRATIONS).includes(m))).toBe(false);
    expect(pending).toEqual(all.filter((m) => !namesBefore.includes(m) && !Object.values(RENAMED_MIGRATIONS).includes(m)));

    const migrate = await runCli(['--config', config, 'migrate'], { env: { PLATFORM_API_KEY: 'not-used-by-migrate' } });
    expect(migrate.stderr).toBe('');
    expect(migrate.code).toBe(0);
    for (const renamed of Object.values(RENAMED_MIGRATIONS)) expect(migrate.stdout).not.toContain(renamed);

    const namesAfter = await recorded();
    expect(namesAfter).toEqual(all);
    expect(namesAfter.slice(0, namesBefore.length)).toEqual(namesBefore.map((n) => RENAMED_MIGRATIONS[n] ?? n));
    // Every row and every value kept; columns the newer migrations add (sync_runs.job_id, attempt) are empty on old rows.
    const after = await snapshot();
    const newColumns = after.runs.flatMap((r, i) => Object.keys(r).filter((k) => !(k in before.runs[i]!)));
    expect(new Set(newColumns)).toEqual(new Set(before.runs.length ? ['job_id', 'attempt'] : []));
    expect(after.runs.every((r) => r.job_id === null && r.attempt === null)).toBe(true);
    const asBefore = {
      ...after,
      runs: after.runs.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'job_id' && k !== 'attempt'))),
    };
    expect(asBefore).toEqual(before);

    // A second run finds nothing to do.
    const again = await runCli(['--config', config, 'migrate'], { env: { PLATFORM_API_KEY: 'not-used-by-migrate' } });
    expect(again.code).toBe(0);
    expect(await recorded()).toEqual(namesAfter);

    // The capture trigger (as the upgraded migrations leave its function) still captures an edit: it joins the open change.
    await t.db('mirror.orders').where({ id: EDITED_ITEM }).update({ title: 'edited after the upgrade' });
    const open = (
      await t.db.raw(`select op, changes, base_version from listsync.outbox where item_id = ? and status = 'pending'`, [EDITED_ITEM])
    ).rows as Rows;
    expect(open).toEqual([
      { op: 'update', changes: { notes: 'edited before the upgrade', title: 'edited after the upgrade' }, base_version: 1 },
    ]);
    const other = (await t.db('mirror.orders').whereNot({ id: EDITED_ITEM }).whereNotNull('row_version').first('id')) as { id: string };
    await t.db('mirror.orders').where({ id: other.id }).update({ notes: 'a new edit' });
    const added = (await t.db.raw(`select op, changes from listsync.outbox where item_id = ? and status = 'pending'`, [other.id]))
      .rows as Rows;
    expect(added).toEqual([{ op: 'update', changes: { notes: 'a new edit' } }]);

    // The mirror table made by the previous release now refuses edits of listsync's own columns.
    for (const [column, value] of [
      ['_raw', `'{}'::jsonb`],
      ['_synced_at', `now() - interval '1 day'`],
      ['_deleted_at', 'now()'],
    ]) {
      const err = await t.db.raw(`update mirror.orders set ?? = ${value} where id = ?`, [column!, other.id]).catch((e: unknown) => e);
      expect((err as Error).message).toContain(`column ${column} of mirror.orders is managed by listsync and cannot be changed`);
    }
  });

  it("the migrations from their SQL files define listsync's functions as the previous release did", async () => {
    const fresh = await createTestDatabase();
    try {
      const definitions = async (db: TestDatabase['db']) =>
        (
          await db.raw(
            `select p.proname, pg_get_functiondef(p.oid) as def from pg_proc p join pg_namespace n on n.oid = p.pronamespace
              where n.nspname = 'listsync' order by p.proname, pg_get_function_identity_arguments(p.oid)`,
          )
        ).rows as { proname: string; def: string }[];
      const previous = await definitions(t.db);
      expect(previous.map((d) => d.proname)).toEqual(
        expect.arrayContaining(['mirror_capture', 'mirror_check_writable', 'mirror_check_values', 'mirror_base_version']),
      );
      expect(await definitions(fresh.db)).toEqual(previous);
    } finally {
      await fresh.drop();
    }
  });
});
