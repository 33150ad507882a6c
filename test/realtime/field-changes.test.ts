/**
 * Item events after the list's fields changed on the platform: the applier
 * writes platform items into the mirror as a pull does, so it never writes
 * them by fields the platform has moved away from. A slot reused, a field's
 * kind widened: the events wait for a pull to set the table up, then apply,
 * and the old field's values stay whole. Against the emulator over HTTP
 * (its deliveries to serve's receiver) and a real PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { FieldMeta } from '../../src/platform/types.js';
import { sameFields } from '../../src/realtime/field-guard.js';
import { decodeStorable } from '../../src/storable.js';
import { SAMPLE_FIELDS } from '../../src/emulator/index.js';
import { APP, closeRunning, LIST, liveIds, settled, start, until, type Running } from './support.js';

afterEach(closeRunning);

const FIELDS_ROUTE = 'GET /v1/lists/{appID}/{listID}/fields';

/** The kept field metadata as old as the default age allows and more: the next write asks `/fields`. */
async function ageKeptFields(r: Running): Promise<void> {
  await r.w.t
    .db('listsync.lists')
    .where({ name: LIST })
    .update({ field_meta_at: r.w.t.db.raw(`now() - interval '20 minutes'`) });
}

/** Per item, the raw value `_raw` holds under `key`. */
async function rawById(r: Running, key: string): Promise<Map<string, unknown>> {
  const rows = (await r.w.t.db.raw('select id, _raw from mirror.orders')).rows as { id: string; _raw: unknown }[];
  return new Map(rows.map((x) => [x.id, (decodeStorable(x._raw) as Record<string, unknown>)[key]]));
}

async function notesById(r: Running, column: string): Promise<Map<string, string | null>> {
  const rows = (await r.w.t.db.raw(`select id, ${column} as v from mirror.orders`)).rows as { id: string; v: string | null }[];
  return new Map(rows.map((x) => [x.id, x.v]));
}

/** Waits until every edited item's column shows `value` (the column may not exist yet). */
async function applied(r: Running, column: string, edited: readonly string[], value: (id: string) => string): Promise<void> {
  await until(
    `${column} of the edited items`,
    async () => {
      const now = await notesById(r, column).catch(() => undefined);
      return now !== undefined && edited.every((id) => now.get(id) === value(id));
    },
    30_000,
  );
  await settled(r, 60_000);
}

async function pullRuns(r: Running): Promise<number> {
  return Number(((await r.w.t.db('listsync.sync_runs').where({ job: 'pull' }).count({ n: '*' })) as { n: string }[])[0]!.n);
}

async function editNotes(r: Running, ids: readonly string[], value: string): Promise<void> {
  for (const id of ids) await r.w.emu.admin.editItem(APP, LIST, id, { Data: { Text4: value } });
}

/** Every old note kept (column and `_raw`), the edited items' new field in a column of its own. */
async function expectNotesKept(
  r: Running,
  before: Map<string, string | null>,
  rawBefore: Map<string, unknown>,
  edited: readonly string[],
): Promise<void> {
  const rows = (await r.w.t.db.raw('select id, notes_removed, priority, _raw from mirror.orders')).rows as {
    id: string;
    notes_removed: string | null;
    priority: string | null;
    _raw: unknown;
  }[];
  expect(rows).toHaveLength(before.size);
  for (const row of rows) expect(row.notes_removed, `notes of ${row.id}`).toBe(before.get(row.id));
  for (const id of edited) {
    const row = rows.find((x) => x.id === id)!;
    expect(row.priority).toBe('high');
    const raw = decodeStorable(row._raw) as Record<string, unknown>;
    expect(raw['Text4@notes_removed']).toBe(rawBefore.get(id));
    expect(raw.Text4).toBe('high');
  }
}

describe('item events after the fields changed on the platform', { timeout: 90_000 }, () => {
  it('a slot reused with no sign in the items: the kept metadata is old, so the flush asks, and waits for a pull', async () => {
    const r = await start({ applier: { retryDelayMs: 200, maxRetryDelayMs: 1000 } });
    const before = await notesById(r, 'notes');
    const rawBefore = await rawById(r, 'Text4');
    expect([...before.values()].filter((v) => v !== null).length).toBeGreaterThan(0);
    await ageKeptFields(r);
    const pulls = await pullRuns(r);
    await r.w.emu.admin.reuseSlot(APP, LIST, 'Text4', { FieldType: 'Text', Type: 'radio', DisplayName: 'Priority' });
    const edited = (await liveIds(r)).slice(0, 10);
    await editNotes(r, edited, 'high');
    await applied(r, 'priority', edited, () => 'high');
    await expectNotesKept(r, before, rawBefore, edited);
    expect(await pullRuns(r)).toBeGreaterThan(pulls);
    const changes = (await r.w.t.db('listsync.schema_changes').where({ kind: 'slot-reused' })) as { field: string }[];
    expect(changes.map((c) => c.field)).toEqual(['Text4']);
  });

  it('a slot reused after its field was seen removed: the key of a removed field is a sign, the old notes stay whole', async () => {
    const r = await start({ applier: { retryDelayMs: 200, maxRetryDelayMs: 1000 } });
    const before = await notesById(r, 'notes');
    const rawBefore = await rawById(r, 'Text4');
    await r.w.emu.admin.deleteField(APP, LIST, 'Text4');
    // Items stop carrying Text4 (a status edit's callback re-reads one): the flush asks, a pull keeps the column as removed.
    const [first] = await liveIds(r);
    await r.w.emu.admin.editItem(APP, LIST, first!, { Data: { [SAMPLE_FIELDS.status]: 'Closed' } });
    await applied(r, 'status', [first!], () => 'Closed');
    const removed = (await r.w.t.db('listsync.schema_changes').where({ field: 'Text4' }).select('kind')) as { kind: string }[];
    expect(removed.map((c) => c.kind)).toContain('removed');

    await r.w.emu.admin.reuseSlot(APP, LIST, 'Text4', { FieldType: 'Text', Type: 'radio', DisplayName: 'Priority' });
    const edited = (await liveIds(r)).slice(0, 10);
    await editNotes(r, edited, 'high');
    await applied(r, 'priority', edited, () => 'high');
    await expectNotesKept(r, before, rawBefore, edited);
  });

  it("a field's kind widened: the edited items' text reaches the column, not NULL", async () => {
    const r = await start({ applier: { retryDelayMs: 200, maxRetryDelayMs: 1000 } });
    await r.w.emu.admin.changeFieldKind(APP, LIST, 'Bigint1', { FieldType: 'Text', Type: 'input' });
    const edited = (await liveIds(r)).slice(0, 5);
    for (const id of edited) await r.w.emu.admin.editItem(APP, LIST, id, { Data: { Bigint1: `about ${id.slice(-3)}` } });
    await applied(r, 'quantity', edited, (id) => `about ${id.slice(-3)}`);
    const widened = (await r.w.t.db('listsync.schema_changes').where({ field: 'Bigint1' }).select('kind')) as { kind: string }[];
    expect(widened.map((c) => c.kind)).toContain('widened');
  });

  it('nothing changed: one `/fields` renews the kept metadata, the events apply at once, no pull runs', async () => {
    const r = await start();
    await ageKeptFields(r);
    const pulls = await pullRuns(r);
    await r.w.emu.admin.clearRequests();
    const edited = (await liveIds(r)).slice(0, 5);
    await editNotes(r, edited, 'checked');
    await applied(r, 'notes', edited, () => 'checked');
    const asked = (await r.w.emu.admin.requests()).filter((e) => e.route === FIELDS_ROUTE);
    expect(asked).toHaveLength(1);
    expect(await pullRuns(r)).toBe(pulls);
    const kept = (await r.w.t.db('listsync.lists').where({ name: LIST }).first('field_meta_at')) as { field_meta_at: Date };
    expect(Date.now() - kept.field_meta_at.getTime()).toBeLessThan(60_000);
  });
});

describe('sameFields', () => {
  const a = [
    { FieldName: 'Text1', FieldID: '11', FieldType: 'Text', Type: 'input', Rules: { Options: ['a', 'b'], Max: 3 } },
    { FieldName: 'Text4', FieldID: '14', FieldType: 'Text', Type: 'textarea' },
  ] as FieldMeta[];
  it('the same answer in another order, its keys in another order (as jsonb gives them back), is the same', () => {
    const b = [
      { Type: 'textarea', FieldType: 'Text', FieldID: '14', FieldName: 'Text4' },
      { Rules: { Max: 3, Options: ['a', 'b'] }, Type: 'input', FieldType: 'Text', FieldID: '11', FieldName: 'Text1' },
    ] as FieldMeta[];
    expect(sameFields(a, b)).toBe(true);
  });
  it('another FieldID, another kind, an option more, a field fewer: not the same', () => {
    expect(sameFields(a, [a[0]!, { ...a[1]!, FieldID: '15' }])).toBe(false);
    expect(sameFields(a, [a[0]!, { ...a[1]!, FieldType: 'Bigint' }])).toBe(false);
    expect(sameFields(a, [{ ...a[0]!, Rules: { Options: ['a', 'b', 'c'], Max: 3 } }, a[1]!])).toBe(false);
    expect(sameFields(a, [a[0]!])).toBe(false);
  });
});
