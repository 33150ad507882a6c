/**
 * Display names that are listsync's own column names, display names and values PostgreSQL text
 * cannot hold, and a type pinned in the config: pulls succeed, every view column shows the field it
 * claims, `_raw` gives back exactly what the platform sent. Emulator over HTTP, real PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeStorable, loadTableMapping, readRegistry } from '../../src/mirror/index.js';
import { unescapeStorable } from '../../src/storable.js';
import { recentSchemaChanges } from '../../src/store/schema-changes.js';
import type { SeedFile } from '../../src/emulator/seed.js';
import { pullList } from '../../src/sync/pull.js';
import { minutesLater, PAST_FIELDS_AGE_MINUTES } from '../helpers/later.js';
import { startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const rows = async <T>(world: World, sql: string): Promise<T[]> => ((await world.t.db.raw(sql)) as { rows: T[] }).rows;

const CLASHING = ['Valid From', 'Valid To', 'Synced At', '_synced_at', 'Deleted At', 'Raw', 'Id', 'Row Version'];
const ID = '1000000000000000001';

type SeedFields = NonNullable<SeedFile['lists']>[number]['fields'];

function seedOf(fields: SeedFields, item: Record<string, string>): SeedFile {
  return {
    lists: [
      {
        appID: 'app',
        listID: 'odd',
        fields: [{ FieldName: 'Title', FieldType: 'Text', Type: 'input' }, ...fields],
        items: [{ ListDataID: ID, Title: 'one', Created: '2026-01-02 09:00:00', Modified: '2026-01-02 09:00:00', ...item }],
      },
    ],
  };
}

async function pull(world: World, clock?: () => Date) {
  const r = await pullList({ ...world.deps(), ...(clock ? { clock } : {}) }, world.config.lists[0]!);
  expect(r.status, r.status === 'failed' ? world.logs.join('') : '').toBe('succeeded');
  return r;
}

describe("display names that are listsync's own column names", () => {
  it('with history and reporting views: pulls succeed and every view column shows the field it claims', async () => {
    const fields = CLASHING.map((DisplayName, i) => ({ FieldName: `Text${i + 1}`, FieldType: 'Text', Type: 'input', DisplayName }));
    const values: Record<string, string> = Object.fromEntries(CLASHING.map((name, i) => [`Text${i + 1}`, `value of ${name}`]));
    w = await startWorld({
      emulator: { sample: false, seed: seedOf(fields, values) },
      list: { name: 'odd', appID: 'app', listID: 'odd', history: true },
    });
    await pull(w);
    await w.emu.admin.editItem('app', 'odd', ID, { Data: { Text1: 'edited' } });
    await pull(w);

    const mapping = (await loadTableMapping(w.t.db, 'mirror', 'odd'))!;
    const columnOf = (field: string) => mapping.columnFor(field)!.column;
    expect(CLASHING.map((_n, i) => columnOf(`Text${i + 1}`))).toEqual([
      'valid_from_2',
      'valid_to_2',
      'synced_at_2',
      'synced_at_3',
      'deleted_at',
      'raw',
      'id_2',
      'row_version_2',
    ]);
    const sent = await w.emu.admin.getItem('app', 'odd', ID);
    expect(sent.Text1).toBe('edited');
    const live = (await rows<Record<string, unknown>>(w, 'select * from reporting.odd'))[0]!;
    for (const c of mapping.columns) expect(live[c.column], c.column).toBe(sent[c.field]);
    expect(live.synced_at).toBeInstanceOf(Date);
    expect(live.id).toBe(ID);
    const versions = await rows<Record<string, unknown>>(w, 'select * from reporting.odd_history order by row_version');
    expect(versions).toHaveLength(2);
    expect(versions[0]!.valid_from).toBeInstanceOf(Date);
    expect(versions[0]!.valid_to).toBeInstanceOf(Date);
    expect(versions.map((v) => v.valid_from_2)).toEqual(['value of Valid From', 'edited']);
    const comments = await rows<{ name: string; comment: string }>(
      w,
      `select a.attname as name, col_description(a.attrelid, a.attnum) as comment from pg_attribute a
        where a.attrelid = 'reporting.odd'::regclass and a.attnum > 0`,
    );
    const comment = new Map(comments.map((c) => [c.name, c.comment]));
    expect(comment.get('synced_at')).toMatch(/when listsync last wrote this row/);
    expect(comment.get('synced_at_2')).toMatch(/"Synced At" \(platform field Text3/);
  });
});

describe('text PostgreSQL cannot hold', () => {
  it('a display name with a lone surrogate, values with NUL and a lone surrogate: stored, given back exactly, counted', async () => {
    const fields = [
      { FieldName: 'Text1', FieldType: 'Text', Type: 'input', DisplayName: 'Mood \ud83d' },
      { FieldName: 'Text2', FieldType: 'Text', Type: 'input', DisplayName: 'Note' },
      { FieldName: 'Text3', FieldType: 'Text', Type: 'checkbox', DisplayName: 'Tags' },
    ];
    const item = { Text1: 'x\udc00y', Text2: 'a\u0000b', Text3: JSON.stringify(['p\u0000q', '\u0010marked']) };
    w = await startWorld({ emulator: { sample: false, seed: seedOf(fields, item) }, list: { name: 'odd', appID: 'app', listID: 'odd' } });
    const r = await pull(w);
    expect(r.counters.rows_unstorable).toBe(1);
    expect(r.counters.rows_failed).toBe(0);

    const sent = await w.emu.admin.getItem('app', 'odd', ID);
    const row = (await rows<Record<string, unknown>>(w, 'select * from mirror.odd'))[0]!;
    expect(decodeStorable(row._raw)).toEqual(sent);
    expect(row.mood).toBe('x\ufffdy');
    expect(row.note).toBe('a\ufffdb');
    expect(row.tags).toEqual(['p\ufffdq', '\u0010marked']);
    const registry = (await readRegistry(w.t.db, 'odd'))!;
    expect(registry.fields.find((f) => f.field === 'Text1')?.displayName).toBe('Mood \ud83d');
    const run = await rows<{ rows_unstorable: string }>(w, `select rows_unstorable from listsync.sync_runs where id = ${r.runId}`);
    expect(Number(run[0]!.rows_unstorable)).toBe(1);

    // A second pull after an edit: still fine.
    await w.emu.admin.editItem('app', 'odd', ID, { Data: { Text2: 'c\u0000d' } });
    await pull(w);
    const again = (await rows<Record<string, unknown>>(w, 'select * from mirror.odd'))[0]!;
    expect(decodeStorable(again._raw)).toEqual(await w.emu.admin.getItem('app', 'odd', ID));
  });
});

describe('a display name renamed to one with a lone surrogate', () => {
  it('high alone, then low alone: every pull exits 0 with no failed run; the column comment and schema_changes give the names back exactly', async () => {
    const fields = [{ FieldName: 'Text1', FieldType: 'Text', Type: 'input', DisplayName: 'Mood' }];
    w = await startWorld({
      emulator: { sample: false, seed: seedOf(fields, { Text1: 'calm' }) },
      list: { name: 'odd', appID: 'app', listID: 'odd', history: true },
    });
    const world = w;
    await pull(world);
    const names = ['Mood \ud83d', 'Mood \udc00 again'];
    for (const [i, name] of names.entries()) {
      await world.emu.admin.renameField('app', 'odd', 'Text1', name);
      // A rename changes no item key: the pull minutes later asks the field metadata as its kept answer ages out.
      const r = await pull(world, minutesLater(PAST_FIELDS_AGE_MINUTES * (i + 1)));
      expect(r.schemaChanges.join('\n')).toMatch(/is now called/);
      const comment = await rows<{ c: string }>(
        world,
        `select col_description('mirror.odd'::regclass, attnum) as c from pg_attribute where attrelid = 'mirror.odd'::regclass and attname = 'mood'`,
      );
      expect(unescapeStorable(comment[0]!.c)).toContain(`"${name}"`);
      const change = (await recentSchemaChanges(world.t.db, { list: 'odd' })).find((c) => c.kind === 'renamed' && c.after === name);
      expect(change?.before).toBe(name === names[0] ? 'Mood' : names[0]);
      expect((await readRegistry(world.t.db, 'odd'))!.fields.find((f) => f.field === 'Text1')?.displayName).toBe(name);
    }
    expect(await rows(world, `select id, error from listsync.sync_runs where status <> 'succeeded'`)).toEqual([]);
    const details = await rows<{ details: unknown }>(world, `select details from listsync.sync_runs order by id`);
    expect(JSON.stringify(decodeStorable(details.map((d) => d.details)))).toContain(JSON.stringify(names[1]).slice(1, -1));
  });
});

describe('a type pinned in lists[].columns', () => {
  it('gives text[] over metadata that names only the storage kind, with the platform values', async () => {
    const fields = [{ FieldName: 'Text2', FieldType: 'Text', Type: 'checkbox', DisplayName: 'Labels' }];
    w = await startWorld({
      emulator: { sample: false, seed: seedOf(fields, { Text2: '["red","blue"]' }) },
      list: { name: 'odd', appID: 'app', listID: 'odd', columns: { Text2: { name: 'tags', type: 'text[]' } } },
    });
    await w.emu.admin.setSettings({ fieldMeta: 'type-only' });
    await pull(w);
    const types = await rows<{ type: string }>(
      w,
      `select format_type(atttypid, atttypmod) as type from pg_attribute where attrelid = 'mirror.odd'::regclass and attname = 'tags'`,
    );
    expect(types[0]!.type).toBe('text[]');
    expect((await rows<{ tags: string[] }>(w, 'select tags from mirror.odd'))[0]!.tags).toEqual(['red', 'blue']);
    expect((await readRegistry(w.t.db, 'odd'))!.fields.find((f) => f.field === 'Text2')?.kindSource).toBe('lists[].columns');
  });
});
