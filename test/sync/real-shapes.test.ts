/**
 * The mirror from every plausible field-metadata layout: columns named from
 * display names with typed SQL columns, values equal to the platform's, and a
 * SQL edit of a display-named column written back to the right field. Also:
 * `check` with a field list that omits RowVersion, and a pull inside the
 * platform's query lag never moving a row's version backwards.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_FIELDS as F } from '../../src/emulator/index.js';
import { FIELD_META_ARRANGEMENTS } from '../../src/emulator/field-meta-forms.js';
import { loadTableMapping, upsertItems } from '../../src/mirror/index.js';
import { pullList } from '../../src/sync/pull.js';
import { pushList } from '../../src/sync/push.js';
import { runCli } from '../helpers/cli.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const TYPES = {
  order_no: 'text',
  customer: 'text',
  status: 'text',
  notes: 'text',
  quantity: 'numeric',
  amount: 'numeric',
  order_date: 'date',
  shipped_at: 'timestamp with time zone',
  paid: 'boolean',
  tags: 'ARRAY',
  owner: 'text',
  website: 'text',
  attachment: 'jsonb',
};

async function columnTypes(world: World): Promise<Record<string, string>> {
  const r = (await world.t.db.raw(
    `select column_name, data_type from information_schema.columns where table_schema = 'mirror' and table_name = 'orders'`,
  )) as {
    rows: { column_name: string; data_type: string }[];
  };
  return Object.fromEntries(r.rows.map((c) => [c.column_name, c.data_type]));
}

describe.each(FIELD_META_ARRANGEMENTS)('field metadata served as %s', (fieldMeta) => {
  it('mirrors into display-named, typed columns equal to the platform, and writes a SQL edit back to the right field', async () => {
    w = await startWorld({ emulator: { items: 300, fieldMeta, timeZone: 'Asia/Shanghai' }, platform: { timeZone: 'Asia/Shanghai' } });
    const list = w.config.lists[0]!;
    expect((await pullList(w.deps(), list)).status).toBe('succeeded');
    // With the storage kind alone (`type-only`) nothing says a Text field is multi-value: tags stay text, whole.
    expect(await columnTypes(w)).toMatchObject(fieldMeta === 'type-only' ? { ...TYPES, tags: 'text' } : TYPES);
    expect(await expectMirrorEqualsPlatform(w)).toBe(300);
    const mapping = await loadTableMapping(w.t.db, 'mirror', 'orders');
    expect(mapping!.columnFor(F.amount)?.column).toBe('amount');

    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
    await w.t.db('mirror.orders').where({ id }).update({ status: 'Shipped', amount: '1234.50', paid: true, order_date: '2026-02-03' });
    const pushed = await pushList(w.deps(), list);
    expect(pushed.applied).toBe(1);
    const item = await w.emu.admin.getItem('demo', 'orders', id);
    expect([item[F.status], item[F.amount], item[F.paid], item[F.orderDate]]).toEqual(['Shipped', '1234.50', '1', '2026-02-03']);
    expect(await expectMirrorEqualsPlatform(w)).toBe(300);
  });
});

describe('check against real shapes', () => {
  it('passes against a field list without RowVersion, reading the version from an item', async () => {
    w = await startWorld({ emulator: { items: 20, fieldMeta: 'control-only' } });
    const fields = await w.client.getFields('demo', 'orders');
    expect(fields.map((f) => f.FieldName)).not.toContain('RowVersion');
    await runCli(['--config', w.configFile, 'migrate'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd });
    const r = await runCli(['--config', w.configFile, 'check'], { env: { PLATFORM_API_KEY: w.emu.apiKey }, cwd: w.cwd });
    expect(r.stdout).toContain('ok   platform orders');
    expect(r.code).toBe(0);
  });
});

describe('query lag', () => {
  it('a pull inside the lag never moves a mirror row back to an older version', async () => {
    w = await startWorld({ emulator: { items: 50, queryLagMs: 3_600_000 } });
    const list = w.config.lists[0]!;
    await pullList(w.deps(), list);
    const id = String((await w.t.db('mirror.orders').orderBy('id').first('id')).id);
    const v2 = await w.emu.admin.editItem('demo', 'orders', id, { Data: { [F.status]: 'Paid' } });
    // Read by ID (no lag), as write-back and real time do: the mirror holds the new version.
    const mapping = (await loadTableMapping(w.t.db, 'mirror', 'orders'))!;
    await upsertItems(w.t.db, mapping, [await w.client.getItem('demo', 'orders', id)], w.config.platform.timeZone);
    expect(Number((await w.t.db('mirror.orders').where({ id }).first('row_version')).row_version)).toBe(v2);
    // Queries still show the old version for the next hour: a full re-read must not take it.
    const queried = (await w.client.queryItems('demo', 'orders', { Filters: [{ Field: 'ListDataID', Type: 0, Value: id }] })).items[0]!;
    expect(Number(queried.RowVersion)).toBe(v2 - 1);
    const r = await pullList(w.deps(), list, { kind: 'backfill', from: '2000-01-01' });
    expect(r.status).toBe('succeeded');
    const row = await w.t.db('mirror.orders').where({ id }).first('row_version', 'status');
    expect([Number(row.row_version), row.status]).toEqual([v2, 'Paid']);
  });
});
