import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, type SeedFile, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, QA_SEED, call, query, titles } from './helpers.js';

type Field = Record<string, unknown>;

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: false });
});
afterAll(async () => {
  await emu.close();
});

async function fields(e: RunningEmulator = emu): Promise<Map<string, Field>> {
  const r = await call<Envelope<Field[]>>(e, 'GET', '/lists/qa/things/fields');
  expect(r.json.Status).toBe(0);
  return new Map(r.json.Data.map((f) => [String(f['FieldName']), f]));
}

describe('GET .../fields in the four arrangements', () => {
  it('exported (the default): FieldType holds the storage kind, Type the control, FieldID a GUID-like string', async () => {
    expect(await emu.admin.settings()).toMatchObject({ fieldMeta: 'exported', fieldFlags: 'boolean' });
    const f = await fields();
    expect(f.get('Num')).toMatchObject({ FieldType: 'Bigint', Type: 'input_number', IsIndex: true });
    expect(f.get('Flag')).toMatchObject({ FieldType: 'Bit', Type: 'switch' });
    expect(String(f.get('Num')!['FieldID'])).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('swapped: FieldType holds the control, Type the storage kind', async () => {
    await emu.admin.setSettings({ fieldMeta: 'swapped' });
    try {
      const f = await fields();
      expect(f.get('Num')).toMatchObject({ FieldType: 'input_number', Type: 'Bigint' });
      expect(f.get('Day')).toMatchObject({ FieldType: 'datepicker', Type: 'Datetime' });
      expect(typeof f.get('Num')!['FieldID']).toBe('string');
    } finally {
      await emu.admin.setSettings({ fieldMeta: 'exported' });
    }
  });

  it('type-only: Type holds the storage kind, no FieldType key at all, FieldID an integer', async () => {
    await emu.admin.setSettings({ fieldMeta: 'type-only' });
    try {
      const f = await fields();
      for (const field of f.values()) {
        expect(Object.keys(field)).not.toContain('FieldType');
        expect(Number.isInteger(field['FieldID'])).toBe(true);
      }
      expect(f.get('Price')).toMatchObject({ Type: 'Decimal', DisplayName: 'Price' });
      expect(f.get('Tags')).toMatchObject({ Type: 'Text' });
      expect(new Set([...f.values()].map((x) => x['FieldID'])).size).toBe(f.size);
    } finally {
      await emu.admin.setSettings({ fieldMeta: 'exported' });
    }
  });

  it('control-only: Type holds the control, no FieldType key, FieldID a string; queries still compare by storage kind', async () => {
    await emu.admin.setSettings({ fieldMeta: 'control-only' });
    try {
      const f = await fields();
      for (const field of f.values()) expect(Object.keys(field)).not.toContain('FieldType');
      expect(f.get('Num')).toMatchObject({ Type: 'input_number' });
      expect(f.get('Tags')).toMatchObject({ Type: 'checkbox' });
      expect(typeof f.get('Num')!['FieldID']).toBe('string');
      // Num is Bigint: 10 > 9 numerically (as text "10" < "9").
      const r = await query(emu, 'qa/things', { Filters: [{ Field: 'Num', Type: 3, Value: '9' }], Sorts: [{ Field: 'Num' }] });
      expect(titles(r.json.Data)).toEqual(['alpha', 'charlie']);
    } finally {
      await emu.admin.setSettings({ fieldMeta: 'exported' });
    }
  });

  it('serves the flags as numbers or strings when asked', async () => {
    await emu.admin.setSettings({ fieldFlags: 'number' });
    let f = await fields();
    expect(f.get('Num')).toMatchObject({ IsIndex: 1, IsSystem: 0, IsUnique: 0, IsSort: 1 });
    await emu.admin.setSettings({ fieldFlags: 'string' });
    f = await fields();
    expect(f.get('ListDataID')).toMatchObject({ IsIndex: 'true', IsSystem: 'true' });
    expect(f.get('Notes')).toMatchObject({ IsIndex: 'false' });
    await emu.admin.setSettings({ fieldFlags: 'boolean' });
    f = await fields();
    expect(f.get('Notes')).toMatchObject({ IsIndex: false });
  });

  it('rejects an unknown arrangement with a message naming the choices', async () => {
    await expect(emu.admin.setSettings({ fieldMeta: 'sideways' as never })).rejects.toThrow(
      /fieldMeta.*exported.*swapped.*type-only.*control-only/s,
    );
    expect((await emu.admin.settings()).fieldMeta).toBe('exported');
  });

  it('is chosen by a start option or a seed key; the admin export keeps the full truth', async () => {
    const seeded: SeedFile = { ...QA_SEED, fieldMeta: 'type-only', fieldFlags: 'number' };
    const [byOption, bySeed] = await Promise.all([
      startEmulator({ port: 0, seed: QA_SEED, rateLimit: false, fieldMeta: 'control-only' }),
      startEmulator({ port: 0, seed: seeded, rateLimit: false }),
    ]);
    try {
      expect((await fields(byOption)).get('Day')).toEqual(expect.objectContaining({ Type: 'datepicker' }));
      expect((await fields(byOption)).get('Day')).not.toHaveProperty('FieldType');
      expect((await fields(bySeed)).get('Day')).toMatchObject({ Type: 'Datetime', IsIndex: 1 });
      expect(await bySeed.admin.settings()).toEqual({
        fieldMeta: 'type-only',
        fieldFlags: 'number',
        queryLagMs: 0,
        unknownItem: { httpStatus: 200, status: 40400 },
        omitEmptyValues: false,
        systemFields: [],
        ignoredWriteFields: [],
        multiValueNumbers: 'bare',
      });
      const exported = await bySeed.admin.exportList('qa', 'things');
      expect(exported.fields.find((x) => x.FieldName === 'Day')).toMatchObject({
        FieldType: 'Datetime',
        Type: 'datepicker',
        IsIndex: true,
      });
    } finally {
      await Promise.all([byOption.close(), bySeed.close()]);
    }
  });
});
