import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateLatest, migrateRollbackAll } from '../src/db.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

describe('migrations', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase({ migrated: false });
  });
  afterAll(async () => t?.drop());

  async function ownTables(): Promise<string[]> {
    const rows = await t
      .db('information_schema.tables')
      .where({ table_schema: 'listsync' })
      .whereNot('table_name', 'like', 'knex_%')
      .pluck('table_name');
    return (rows as string[]).sort();
  }

  it('migrates an empty database, rolls everything back, and migrates again', async () => {
    const first = await migrateLatest(t.db);
    expect(first.length).toBeGreaterThan(0);
    expect(first.every((n) => !/\.(ts|js)$/.test(n))).toBe(true);
    const tables = await ownTables();
    expect(tables).toEqual(
      expect.arrayContaining([
        'lists',
        'sync_state',
        'sync_runs',
        'outbox',
        'conflicts',
        'webhook_subscriptions',
        'webhook_inbox',
        'leases',
        'rate_budget',
      ]),
    );

    expect(await migrateLatest(t.db)).toEqual([]);
    // The console's overview finds each list's last run through this index (bench/console.bench.ts).
    const byList = (await t.db('pg_indexes').where({ schemaname: 'listsync', indexname: 'sync_runs_by_list' }).first('indexdef')) as
      { indexdef: string } | undefined;
    expect(byList?.indexdef).toMatch(/ON listsync\.sync_runs USING btree \(list_name, id\)/);
    // Status finds each list's latest failed run and whether it is running through these, not by walking its runs.
    const partial = (await t
      .db('pg_indexes')
      .where({ schemaname: 'listsync' })
      .whereIn('indexname', ['sync_runs_failed_by_list', 'sync_runs_running_by_list'])
      .orderBy('indexname')
      .select('indexname', 'indexdef')) as { indexname: string; indexdef: string }[];
    expect(partial.map((i) => i.indexname)).toEqual(['sync_runs_failed_by_list', 'sync_runs_running_by_list']);
    expect(partial[0]!.indexdef).toMatch(/ON listsync\.sync_runs USING btree \(list_name, id\) WHERE \(status = 'failed'::text\)/);
    expect(partial[1]!.indexdef).toMatch(/ON listsync\.sync_runs USING btree \(list_name, id\) WHERE \(status = 'running'::text\)/);

    const undone = await migrateRollbackAll(t.db);
    expect(undone.length).toBe(first.length);
    expect(await ownTables()).toEqual([]);

    expect(await migrateLatest(t.db)).toEqual(first);
    expect(await ownTables()).toEqual(tables);
  });
});
