/**
 * The mirror as its readers see it, against the emulator over HTTP and a real
 * Postgres: comments, live views, version history and the schema-change log.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadTableMapping } from '../../src/mirror/index.js';
import { pullList } from '../../src/sync/pull.js';
import { reconcileList } from '../../src/sync/reconcile.js';
import { minutesLater } from '../helpers/later.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const rows = async <T>(world: World, sql: string, bindings: unknown[] = []): Promise<T[]> =>
  ((await world.t.db.raw(sql, bindings as never[])) as { rows: T[] }).rows;

/** The platform field behind a mirror column (the sample's field names may change; the columns are what users see). */
async function fieldOf(world: World, column: string): Promise<string> {
  const mapping = await loadTableMapping(world.t.db, 'mirror', 'orders');
  const c = mapping?.columns.find((x) => x.column === column);
  if (!c) throw new Error(`no column ${column} in the mirror of orders`);
  return c.field;
}

async function columnComments(world: World, schema: string, relation: string): Promise<Map<string, string | null>> {
  const r = await rows<{ name: string; comment: string | null }>(
    world,
    `select a.attname as name, col_description(a.attrelid, a.attnum) as comment from pg_attribute a
      where a.attrelid = to_regclass(?) and a.attnum > 0 and not a.attisdropped`,
    [`"${schema}"."${relation}"`],
  );
  return new Map(r.map((x) => [x.name, x.comment]));
}

const liveIds = async (world: World): Promise<string[]> =>
  (
    await rows<{ id: string }>(world, 'select id from mirror.orders where _deleted_at is null and id not like ? order by id', ['local-%'])
  ).map((r) => r.id);

describe('comments', () => {
  it('names the list and every column after a pull, and follow a display name changed on the platform', async () => {
    w = await startWorld({ emulator: { items: 50 } });
    await pullList(w.deps(), w.config.lists[0]!);

    const table = await rows<{ comment: string }>(w, `select obj_description('mirror.orders'::regclass, 'pg_class') as comment`);
    expect(table[0]!.comment).toMatch(/list "[^"]+" \(listsync list "orders", app demo, list orders\)/);
    expect(table[0]!.comment).toMatch(/deleting rows is refused/);

    const mapping = (await loadTableMapping(w.t.db, 'mirror', 'orders'))!;
    const fields = await w.emu.admin.exportList('demo', 'orders');
    const comments = await columnComments(w, 'mirror', 'orders');
    for (const c of mapping.columns) {
      const meta = fields.fields.find((f) => f.FieldName === c.field)!;
      expect(comments.get(c.column), c.column).toContain(`platform field ${c.field}`);
      if (meta.DisplayName && meta.DisplayName !== c.field) expect(comments.get(c.column), c.column).toContain(`"${meta.DisplayName}"`);
    }
    for (const system of ['id', 'row_version', 'created_at', 'modified_at', '_raw', '_synced_at', '_deleted_at'])
      expect(comments.get(system), system).toBeTruthy();

    const field = await fieldOf(w, 'status');
    await w.emu.admin.renameField('demo', 'orders', field, 'Order state');
    // A rename changes no item key: a pull minutes later asks the field metadata as its kept answer ages out.
    const second = await pullList({ ...w.deps(), clock: minutesLater() }, w.config.lists[0]!);
    expect(second.schemaChanges).toEqual([expect.stringContaining('is now called "Order state"')]);
    const after = await columnComments(w, 'mirror', 'orders');
    expect(after.get('status')).toContain('"Order state"');
    expect(after.get('status')).toContain(`platform field ${field}`);
    // The view carries the same comments.
    expect((await columnComments(w, 'reporting', 'orders')).get('status')).toBe(after.get('status'));
  });
});

describe('live views', () => {
  it('show live rows only, with the reporting columns; a new field appends a column without breaking a view built on them', async () => {
    w = await startWorld({ emulator: { items: 120 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const count = async (sql: string): Promise<number> => Number((await rows<{ n: string }>(w!, sql))[0]!.n);
    expect(await count('select count(*) as n from reporting.orders')).toBe(120);

    const columns = (
      await rows<{ column_name: string }>(
        w,
        `select column_name from information_schema.columns where table_schema = 'reporting' and table_name = 'orders' order by ordinal_position`,
      )
    ).map((r) => r.column_name);
    expect(columns[0]).toBe('id');
    expect(columns).toEqual(expect.arrayContaining(['status', 'amount', 'created_at', 'modified_at', 'synced_at']));
    for (const hidden of ['_raw', '_synced_at', '_deleted_at', 'row_version']) expect(columns).not.toContain(hidden);

    // Delete two items on the platform; reconcile marks them.
    const gone = (await liveIds(w)).slice(0, 2);
    for (const id of gone) await w.emu.admin.deleteItem('demo', 'orders', id);
    await reconcileList(w.deps(), list);
    expect(await count('select count(*) as n from reporting.orders')).toBe(118);
    expect(await count('select count(*) as n from mirror.orders where _deleted_at is null')).toBe(118);
    expect(await count(`select count(*) as n from mirror.orders where _deleted_at is not null`)).toBe(2);
    expect(await count(`select count(*) as n from reporting.orders where id in ('${gone[0]}', '${gone[1]}')`)).toBe(0);

    // A report built on the view, then a new field on the platform.
    await w.t.db.raw('create view public.by_status as select status, count(*) as n from reporting.orders group by status');
    await w.emu.admin.addField('demo', 'orders', {
      FieldName: 'Region',
      DisplayName: 'Region',
      Type: 'input',
      FieldType: 'Text',
      DefaultValue: 'EMEA',
    });
    await pullList(w.deps(), list);
    const after = (
      await rows<{ column_name: string }>(
        w,
        `select column_name from information_schema.columns where table_schema = 'reporting' and table_name = 'orders' order by ordinal_position`,
      )
    ).map((r) => r.column_name);
    expect(after.slice(0, columns.length)).toEqual(columns);
    expect(after.slice(columns.length)).toEqual(['region']);
    expect(await count(`select count(*) as n from reporting.orders where region = 'EMEA'`)).toBe(118);
    expect(await count('select sum(n) as n from public.by_status')).toBe(118);
  });
});

describe('history', () => {
  it('keeps one row per version: edits close the older version where the newer starts; deletes close the open one', async () => {
    w = await startWorld({ emulator: { items: 60 }, list: { history: true } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const open = async (): Promise<number> =>
      Number((await rows<{ n: string }>(w!, 'select count(*) as n from mirror.orders_history where valid_to is null'))[0]!.n);
    expect(await open()).toBe(60);
    expect(Number((await rows<{ n: string }>(w, 'select count(*) as n from mirror.orders_history'))[0]!.n)).toBe(60);

    const ids = await liveIds(w);
    const edited = ids.slice(0, 3);
    const statusField = await fieldOf(w, 'status');
    for (const id of edited) await w.emu.admin.editItem('demo', 'orders', id, { Data: { [statusField]: 'Shipped' } });
    await pullList(w.deps(), list);

    const versions = await rows<{ id: string; row_version: string; valid_from: Date; valid_to: Date | null; status: string | null }>(
      w,
      'select id, row_version, valid_from, valid_to, status from mirror.orders_history where id = any(?) order by id, row_version',
      [edited],
    );
    const mirror = await rows<{ id: string; row_version: string; modified_at: Date }>(
      w,
      'select id, row_version, modified_at from mirror.orders where id = any(?)',
      [edited],
    );
    for (const id of edited) {
      const v = versions.filter((x) => x.id === id);
      expect(v).toHaveLength(2);
      expect(v[0]!.valid_to?.toISOString()).toBe(v[1]!.valid_from.toISOString());
      expect(v[1]!.valid_to).toBeNull();
      expect(v[1]!.status).toBe('Shipped');
      expect(v[1]!.valid_from.toISOString()).toBe(mirror.find((m) => m.id === id)!.modified_at.toISOString());
    }
    expect(await open()).toBe(60);

    const deleted = ids.slice(10, 12);
    for (const id of deleted) await w.emu.admin.deleteItem('demo', 'orders', id);
    await reconcileList(w.deps(), list);
    const stillOpen = await rows<{ id: string }>(w, 'select id from mirror.orders_history where valid_to is null and id = any(?)', [
      deleted,
    ]);
    expect(stillOpen).toEqual([]);
    expect(await open()).toBe(58);

    // "As of" through the reporting view: before the edits, the edited items had their first version.
    const asOf = await rows<{ n: string }>(
      w,
      `select count(*) as n from reporting.orders_history h
        where h.id = any(?) and h.valid_from <= (select min(valid_from) from mirror.orders_history where id = any(?) and valid_to is null) - interval '1 microsecond'
          and (h.valid_to is null or h.valid_to > (select min(valid_from) from mirror.orders_history where id = any(?) and valid_to is null) - interval '1 microsecond')`,
      [edited, edited, edited],
    );
    expect(Number(asOf[0]!.n)).toBe(3);
  });

  it('writes nothing when history is off', async () => {
    w = await startWorld({ emulator: { items: 10 } });
    await pullList(w.deps(), w.config.lists[0]!);
    expect((await rows<{ t: string | null }>(w, `select to_regclass('mirror.orders_history')::text as t`))[0]!.t).toBeNull();
  });
});

describe('schema changes', () => {
  it('a field added and another renamed on the platform leave two rows, tied to the run that saw them', async () => {
    w = await startWorld({ emulator: { items: 30 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const before = Number((await rows<{ n: string }>(w, 'select count(*) as n from listsync.schema_changes'))[0]!.n);
    expect(before).toBe(1); // the table was created

    const field = await fieldOf(w, 'status');
    await w.emu.admin.renameField('demo', 'orders', field, 'Order state');
    await w.emu.admin.addField('demo', 'orders', { FieldName: 'Region', DisplayName: 'Region', Type: 'input', FieldType: 'Text' });
    const r = await pullList(w.deps(), list);
    const changes = await rows<{
      kind: string;
      field: string;
      column_name: string;
      before: string | null;
      after: string | null;
      run_id: string;
    }>(
      w,
      'select kind, field, column_name, before, after, run_id from listsync.schema_changes where id > (select min(id) from listsync.schema_changes) order by id',
    );
    expect(changes.map((c) => [c.kind, c.field, c.column_name])).toEqual(
      expect.arrayContaining([
        ['renamed', field, 'status'],
        ['added', 'Region', 'region'],
      ]),
    );
    expect(changes).toHaveLength(2);
    expect(changes.find((c) => c.kind === 'renamed')!.after).toBe('Order state');
    expect(changes.every((c) => Number(c.run_id) === r.runId)).toBe(true);
  });
});
