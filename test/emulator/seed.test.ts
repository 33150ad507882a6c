import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SeedError, loadSeedFile, parseSeedFile, startEmulator } from '../../src/emulator/index.js';
import { buildStore } from '../../src/emulator/build-store.js';
import { type Envelope, query } from './helpers.js';

const referenceDate = new Date('2026-01-15T00:00:00Z');

describe('deterministic sample data', () => {
  it('the same seed number gives byte-identical items; another seed number gives different ones', async () => {
    const [a, b, c] = await Promise.all([
      startEmulator({ port: 0, items: 500, seedNumber: 4, referenceDate, rateLimit: false }),
      startEmulator({ port: 0, items: 500, seedNumber: 4, referenceDate, rateLimit: false }),
      startEmulator({ port: 0, items: 500, seedNumber: 5, referenceDate, rateLimit: false }),
    ]);
    try {
      const [ea, eb, ec] = await Promise.all([a, b, c].map((e) => e.admin.exportList('demo', 'orders')));
      expect(JSON.stringify(eb)).toBe(JSON.stringify(ea));
      expect(JSON.stringify(ec)).not.toBe(JSON.stringify(ea));
      const usersA = await (
        await fetch(`${a.baseUrl}/users/search`, { method: 'POST', headers: { apiKey: a.apiKey }, body: '{"PageSize":100}' })
      ).text();
      const usersB = await (
        await fetch(`${b.baseUrl}/users/search`, { method: 'POST', headers: { apiKey: b.apiKey }, body: '{"PageSize":100}' })
      ).text();
      expect(usersB).toBe(usersA);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  it('spreads Created over the ~400 days before the reference date, Modified >= Created', () => {
    const store = buildStore({ items: 2000, referenceMs: referenceDate.getTime() });
    const items = store.list('demo', 'orders')!;
    const created = Array.from(items.order, (s) => items.created[s]!);
    const modified = Array.from(items.order, (s) => items.modified[s]!);
    const refSec = referenceDate.getTime() / 1000;
    expect(Math.min(...created)).toBeGreaterThanOrEqual(refSec - 401 * 86400);
    expect(Math.max(...created)).toBeLessThan(refSec);
    expect(Math.max(...modified)).toBeLessThan(refSec);
    expect(created.filter((c, i) => modified[i]! < c)).toEqual([]);
  });

  it('writes Created/Modified in the platform time zone', async () => {
    const emu = await startEmulator({ port: 0, items: 5, referenceDate, timeZone: 'Asia/Tokyo', rateLimit: false });
    const utc = await startEmulator({ port: 0, items: 5, referenceDate, rateLimit: false });
    try {
      const [t, u] = await Promise.all([emu.admin.exportList('demo', 'orders'), utc.admin.exportList('demo', 'orders')]);
      const toMs = (s: string): number => Date.parse(`${s.replace(' ', 'T')}Z`);
      expect(toMs(String(t.items[0]!['Created'])) - toMs(String(u.items[0]!['Created']))).toBe(9 * 3600_000);
      expect(t.items[0]!['ListDataID']).toBe(u.items[0]!['ListDataID']);
    } finally {
      await Promise.all([emu.close(), utc.close()]);
    }
  });
});

describe('seed files', () => {
  const good = {
    timeZone: 'Europe/Berlin',
    apiKeys: ['k1', 'k2'],
    users: [{ Name: 'Ada Admin' }, { Name: 'Bob Builder', UserID: '4100000000000000001' }],
    lists: [
      {
        appID: 'app',
        listID: 'tasks',
        fields: [
          { FieldName: 'Title', FieldType: 'Text', Type: 'input', DisplayName: 'Task' },
          { FieldName: 'Due', FieldType: 'Datetime', Type: 'datepicker', IsIndex: true, Rules: { DateFormat: 'yyyy-MM-dd' } },
          { FieldName: 'Done', FieldType: 'Bit', Type: 'switch' },
          { FieldName: 'Doc', FieldType: 'File', Type: 'upload' },
          { FieldName: 'State', FieldType: 'Text', Type: 'flowstatus' },
        ],
        items: [
          {
            ListDataID: '1234567890123456789',
            Title: 'first',
            Due: '2026-01-02',
            Done: '1',
            Created: '2026-01-01 10:00:00',
            RowVersion: 4,
            ModifiedBy: '4100000000000000001',
          },
        ],
        generate: 30,
      },
    ],
  };

  it('loads a valid seed: users, keys, explicit and generated items, system fields added', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'emu-seed-'));
    const path = join(dir, 'seed.json');
    writeFileSync(path, JSON.stringify(good));
    const emu = await startEmulator({ port: 0, seedFile: path, referenceDate, rateLimit: false });
    try {
      expect(emu.apiKey).toBe('k1');
      const r = await query(emu, 'app/tasks', { PageSize: 100, Sorts: [{ Field: 'ListDataID' }] });
      expect(r.json.TotalCount).toBe(31);
      const first = r.json.Data.find((i) => i['ListDataID'] === '1234567890123456789')!;
      expect(first).toMatchObject({
        Title: 'first',
        Due: '2026-01-02',
        Done: '1',
        Created: '2026-01-01 10:00:00',
        Modified: '2026-01-01 10:00:00',
        RowVersion: 4,
        ModifiedBy: '4100000000000000001',
      });
      const fields = await fetch(`${emu.baseUrl}/lists/app/tasks/fields`, { headers: { apiKey: 'k2' } });
      const meta = ((await fields.json()) as Envelope<Array<{ FieldName: string; DisplayName: string }>>).Data;
      expect(meta.map((f) => f.FieldName)).toEqual([
        'ListDataID',
        'RowVersion',
        'Title',
        'Due',
        'Done',
        'Doc',
        'State',
        'Created',
        'Modified',
        'CreatedBy',
        'ModifiedBy',
      ]);
      expect(meta.find((f) => f.FieldName === 'Title')!.DisplayName).toBe('Task');
      for (const i of r.json.Data) {
        expect(String(i['Due'])).toMatch(/^(\d{4}-\d{2}-\d{2})?$/);
        expect(['0', '1']).toContain(i['Done']);
      }
      expect((await query(emu, 'demo/orders', {})).json.Status).toBe(40400);
    } finally {
      await emu.close();
    }
  });

  it('names the JSON path and the problem', () => {
    const bad = (patch: (s: Record<string, unknown>) => void): string => {
      const s = structuredClone(good) as unknown as Record<string, unknown>;
      patch(s);
      try {
        buildStore({ seed: s, referenceMs: referenceDate.getTime() });
      } catch (e) {
        expect(e).toBeInstanceOf(SeedError);
        return (e as Error).message;
      }
      throw new Error('expected a SeedError');
    };
    type L = { fields: Array<Record<string, unknown>>; items: Array<Record<string, unknown>> };
    const list = (s: Record<string, unknown>): L => (s['lists'] as L[])[0]!;
    expect(bad((s) => (list(s).fields[1]!['FieldType'] = 'Date'))).toContain('lists[0].fields[1].FieldType');
    expect(bad((s) => (list(s).fields[1]!['Colour'] = 'red'))).toContain('lists[0].fields[1].Colour: unknown key');
    expect(bad((s) => (list(s).fields[0]!['FieldName'] = 'Created'))).toContain('system field');
    expect(bad((s) => (s['timeZone'] = 'Mars/Olympus'))).toContain('timeZone');
    expect(bad((s) => (list(s).items[0]!['Done'] = 1))).toContain('lists[0].items[0].Done: must be a string');
    expect(bad((s) => (list(s).items[0]!['Nope'] = 'x'))).toContain('lists[0].items[0].Nope: unknown field');
    expect(bad((s) => (list(s).items[0]!['ListDataID'] = 1234))).toContain('lists[0].items[0].ListDataID');
    expect(bad((s) => (list(s).items[0]!['Created'] = 'yesterday'))).toContain('lists[0].items[0].Created');
    expect(bad((s) => (s['lists'] as unknown[]).push(structuredClone((s['lists'] as unknown[])[0])))).toContain('defined twice');
  });

  it('reports unreadable and non-JSON files clearly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'emu-seed-'));
    await expect(loadSeedFile(join(dir, 'missing.json'))).rejects.toThrow(/Cannot read the seed file/);
    const path = join(dir, 'broken.json');
    writeFileSync(path, '{"lists": [');
    await expect(loadSeedFile(path)).rejects.toThrow(/not valid JSON/);
    expect(() => parseSeedFile({ lists: 'x' }, 'inline')).toThrow(/lists/);
  });
});
