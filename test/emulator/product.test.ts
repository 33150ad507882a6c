import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SEED_SCHEMA_PATH, readShippedSeedSchema, seedSchemaText } from '../../src/emulator/seed-schema-file.js';
import { FIELD_TYPE_PAIRS } from '../../src/emulator/field-types.js';
import { FIELD_META_ARRANGEMENTS, loadSeedFile, startEmulator } from '../../src/emulator/index.js';
import { type Envelope, type Item, call, query } from './helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const EXAMPLE = resolve(root, 'examples/seed.example.json');

describe('the seed file JSON Schema', () => {
  it('the shipped seed.schema.json is what the zod seed schema generates (run `npm run emulator:schema` after changing it)', async () => {
    expect(await readShippedSeedSchema()).toBe(seedSchemaText());
  });

  it('describes the keys and the choices an editor should offer', () => {
    const schema = JSON.parse(readFileSync(SEED_SCHEMA_PATH, 'utf8')) as {
      properties: Record<string, { enum?: string[]; description?: string }>;
      additionalProperties: boolean;
    };
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties['fieldMeta']!.enum).toEqual([...FIELD_META_ARRANGEMENTS]);
    for (const key of ['referenceDate', 'queryLagMs', 'timeZone', 'lists', 'users']) expect(Object.keys(schema.properties)).toContain(key);
    expect(schema.properties['timeZone']!.description).toMatch(/time zone/);
  });
});

describe('examples/seed.example.json', () => {
  it('points at the shipped schema, mentions every arrangement and uses every field kind', async () => {
    const raw = JSON.parse(readFileSync(EXAMPLE, 'utf8')) as {
      $schema: string;
      lists: Array<{ description: string; fields: Array<{ FieldType: string; Type: string }> }>;
    };
    expect(resolve(dirname(EXAMPLE), raw.$schema)).toBe(SEED_SCHEMA_PATH);
    const text = readFileSync(EXAMPLE, 'utf8');
    for (const a of FIELD_META_ARRANGEMENTS) expect(text).toContain(a);
    const pairs = new Set(raw.lists.flatMap((l) => l.fields.map((f) => `${f.FieldType}/${f.Type}`)));
    const legacy = new Set(['File/upload']);
    expect(FIELD_TYPE_PAIRS.filter((p) => !pairs.has(p) && !legacy.has(p))).toEqual([]);
    await expect(loadSeedFile(EXAMPLE)).resolves.toMatchObject({ fieldMeta: 'control-only', referenceDate: '2026-03-01' });
  });

  it('starts an emulator that serves it', async () => {
    const emu = await startEmulator({ port: 0, seedFile: EXAMPLE, rateLimit: false });
    try {
      expect(emu.apiKey).toBe('example-key');
      const summary = emu.summary();
      expect(summary).toMatchObject({
        timeZone: 'Europe/Berlin',
        referenceDate: '2026-03-01',
        lists: [{ appID: 'sales', listID: 'invoices', count: 52 }],
      });
      const fields = await call<Envelope<Array<Record<string, unknown>>>>(emu, 'GET', '/lists/sales/invoices/fields');
      expect(fields.json.Data.find((f) => f['FieldName'] === 'File1')).toEqual(
        expect.objectContaining({ DisplayName: 'PDF', Type: 'file-upload' }),
      );
      const first = await query(emu, 'sales/invoices', { Filters: [{ Field: 'Text1', Type: 0, Value: 'INV-0001' }] });
      expect(first.json.Data[0]).toMatchObject<Partial<Item>>({
        Text2: 'Paid',
        Decimal1: '1200.50',
        Bit1: '1',
        RowVersion: 3,
        Created: '2026-02-10 09:00:00',
      });
    } finally {
      await emu.close();
    }
  });
});

describe('--reference-date / referenceDate', () => {
  it('pins generated data: the same day gives the same items, whatever today is', async () => {
    const [byOption, bySeed, otherDay] = await Promise.all([
      startEmulator({ port: 0, items: 200, referenceDate: '2026-01-15', rateLimit: false, now: () => new Date('2026-06-01T12:00:00Z') }),
      startEmulator({ port: 0, sample: true, items: 200, seed: { referenceDate: '2026-01-15' }, rateLimit: false }),
      startEmulator({ port: 0, items: 200, referenceDate: '2026-01-16', rateLimit: false }),
    ]);
    try {
      const [a, b, c] = await Promise.all([
        byOption.admin.exportList('demo', 'orders'),
        bySeed.admin.exportList('demo', 'orders'),
        otherDay.admin.exportList('demo', 'orders'),
      ]);
      expect(JSON.stringify(b.items)).toBe(JSON.stringify(a.items));
      expect(JSON.stringify(c.items)).not.toBe(JSON.stringify(a.items));
      expect(a.items.every((i) => String(i['Created']) < '2026-01-15')).toBe(true);
      expect(byOption.summary().referenceDate).toBe('2026-01-15');
    } finally {
      await Promise.all([byOption.close(), bySeed.close(), otherDay.close()]);
    }
  });

  it('rejects a day that does not exist with a message naming the key', async () => {
    await expect(startEmulator({ port: 0, seed: { referenceDate: '2026-02-30' } })).rejects.toThrow(/referenceDate.*calendar date/);
    await expect(startEmulator({ port: 0, referenceDate: '15.01.2026' })).rejects.toThrow(/referenceDate.*YYYY-MM-DD/);
  });
});
