import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { QA_SEED, query, titles } from './helpers.js';

let emu: RunningEmulator;
const L = 'qa/things';

beforeAll(async () => {
  emu = await startEmulator({ port: 0, seed: QA_SEED, rateLimit: false, referenceDate: new Date('2026-02-01T00:00:00Z') });
});
afterAll(async () => {
  await emu.close();
});

async function match(filters: unknown[], sorts: unknown[] = [{ Field: 'Title' }]): Promise<string[]> {
  const r = await query(emu, L, { Filters: filters, Sorts: sorts, PageSize: 100 });
  expect(r.json.Status, r.json.Message).toBe(0);
  return titles(r.json.Data);
}

describe('filter operators', () => {
  it('0 Equal: text exact, numbers numerically', async () => {
    expect(await match([{ Field: 'Text1', Type: 0, Value: 'banana' }])).toEqual(['bravo']);
    expect(await match([{ Field: 'Num', Type: 0, Value: '10.0' }])).toEqual(['alpha']);
    expect(await match([{ Field: 'Color', Type: 0, Value: 'Red' }])).toEqual([]);
  });

  it('1 <=, 2 >=, 3 >, 4 < on numbers (empty and unparseable values never match)', async () => {
    expect(await match([{ Field: 'Num', Type: 1, Value: '10' }])).toEqual(['alpha', 'bravo', 'foxtrot']);
    expect(await match([{ Field: 'Num', Type: 2, Value: '10' }])).toEqual(['alpha', 'charlie']);
    expect(await match([{ Field: 'Price', Type: 3, Value: '3.25' }])).toEqual(['bravo', 'echo']);
    expect(await match([{ Field: 'Price', Type: 4, Value: '1.5' }])).toEqual(['foxtrot']);
  });

  it('text comparisons are lexical', async () => {
    expect(await match([{ Field: 'Text1', Type: 3, Value: 'b' }])).toEqual(['bravo', 'charlie']);
    expect(await match([{ Field: 'Text1', Type: 4, Value: 'b' }])).toEqual(['alpha', 'echo', 'foxtrot']);
  });

  it('5 NotEqual excludes empty values', async () => {
    expect(await match([{ Field: 'Color', Type: 5, Value: 'red' }])).toEqual(['bravo', 'charlie', 'echo', 'foxtrot']);
  });

  it('6 Null and 7 NotNull (empty string is null)', async () => {
    expect(await match([{ Field: 'Text1', Type: 6 }])).toEqual(['delta']);
    expect(await match([{ Field: 'Text1', Type: 7, Value: '' }])).toEqual(['alpha', 'bravo', 'charlie', 'echo', 'foxtrot']);
    expect(await match([{ Field: 'Tags', Type: 6, Value: '' }])).toEqual(['charlie', 'delta']);
    expect(await match([{ Field: 'Created', Type: 6 }])).toEqual([]);
  });

  it('8 StartsWith and 10 Contains', async () => {
    expect(await match([{ Field: 'Text1', Type: 8, Value: 'ap' }])).toEqual(['alpha', 'echo']);
    expect(await match([{ Field: 'Text1', Type: 10, Value: 'an' }])).toEqual(['bravo', 'foxtrot']);
    expect(await match([{ Field: 'Tags', Type: 10, Value: '"c"' }])).toEqual(['echo', 'foxtrot']);
  });

  it('9 In takes a JSON-encoded array string', async () => {
    expect(await match([{ Field: 'Color', Type: 9, Value: '["red","blue"]' }])).toEqual(['alpha', 'charlie', 'foxtrot']);
    expect(await match([{ Field: 'Num', Type: 9, Value: '["2","33"]' }])).toEqual(['bravo', 'charlie']);
    const bad = await query(emu, L, { Filters: [{ Field: 'Color', Type: 9, Value: 'red,blue' }] });
    expect(bad.json.Status).toBe(40000);
    expect(bad.json.Message).toMatch(/JSON/);
  });

  it('date-time fields compare by calendar day against YYYY-MM-DD', async () => {
    expect(await match([{ Field: 'When', Type: 0, Value: '2026-01-05' }])).toEqual(['alpha', 'charlie', 'echo']);
    expect(await match([{ Field: 'When', Type: 3, Value: '2026-01-05' }])).toEqual(['bravo']);
    expect(await match([{ Field: 'When', Type: 4, Value: '2026-01-05' }])).toEqual(['foxtrot']);
    expect(await match([{ Field: 'When', Type: 1, Value: '2026-01-05' }])).toEqual(['alpha', 'charlie', 'echo', 'foxtrot']);
    expect(await match([{ Field: 'When', Type: 5, Value: '2026-01-05' }])).toEqual(['bravo', 'foxtrot']);
    expect(await match([{ Field: 'When', Type: 9, Value: '["2026-01-06","2025-12-31"]' }])).toEqual(['bravo', 'foxtrot']);
  });

  it('date fields and Created/Modified compare by day too', async () => {
    expect(await match([{ Field: 'Day', Type: 2, Value: '2026-01-02' }])).toEqual(['bravo', 'charlie', 'echo']);
    expect(await match([{ Field: 'Created', Type: 0, Value: '2025-12-02' }])).toEqual(['bravo']);
    expect(await match([{ Field: 'Modified', Type: 0, Value: '2026-01-04' }])).toEqual(['echo']);
  });

  it('a date filter value must be YYYY-MM-DD', async () => {
    for (const Value of ['2026/01/05', '2026-01-05 10:00:00', '2026-02-30']) {
      const r = await query(emu, L, { Filters: [{ Field: 'When', Type: 0, Value }] });
      expect(r.json.Status).toBe(40000);
      expect(r.json.Message).toContain('When');
    }
  });

  it('rejects unknown operator codes', async () => {
    const r = await query(emu, L, { Filters: [{ Field: 'Text1', Type: 11, Value: 'x' }] });
    expect(r.json.Status).toBe(40000);
    expect(r.json.Message).toMatch(/Type/);
  });
});

describe('combining filters', () => {
  it('several filters are ANDed', async () => {
    expect(
      await match([
        { Field: 'Color', Type: 0, Value: 'red' },
        { Field: 'Flag', Type: 0, Value: '1' },
      ]),
    ).toEqual(['alpha']);
  });

  it('Pre "or" joins with the previous filter; and binds tighter than or', async () => {
    expect(
      await match([
        { Field: 'Color', Type: 0, Value: 'red' },
        { Pre: 'or', Field: 'Color', Type: 0, Value: 'blue' },
      ]),
    ).toEqual(['alpha', 'charlie', 'foxtrot']);
    expect(
      await match([
        { Field: 'Color', Type: 0, Value: 'green' },
        { Pre: 'or', Field: 'Flag', Type: 0, Value: '1' },
        { Pre: 'and', Field: 'Num', Type: 2, Value: '10' },
      ]),
    ).toEqual(['alpha', 'bravo', 'charlie', 'echo']);
  });

  it('Child groups nested filters', async () => {
    const filters = [
      { Field: 'Flag', Type: 0, Value: '1' },
      {
        Pre: 'and',
        Child: [
          { Field: 'Color', Type: 0, Value: 'green' },
          { Pre: 'or', Field: 'Color', Type: 0, Value: 'blue' },
        ],
      },
    ];
    expect(await match(filters)).toEqual(['charlie', 'echo']);
    // A filter with both a condition and children: (Flag = 0 or (children...)).
    const mixed = [{ Field: 'Flag', Type: 0, Value: '0', Child: [{ Pre: 'or', Field: 'Color', Type: 0, Value: 'red' }] }];
    expect(await match(mixed)).toEqual(['alpha', 'bravo', 'delta', 'foxtrot']);
  });
});

describe('sorting', () => {
  it('multi-key sorts with Desc; empty text first, unparseable numbers last when descending', async () => {
    const r = await query(emu, L, { Sorts: [{ Field: 'Color' }, { Field: 'Num', Desc: true }] });
    expect(titles(r.json.Data)).toEqual(['delta', 'charlie', 'foxtrot', 'bravo', 'echo', 'alpha']);
  });

  it('ties are broken by ListDataID ascending', async () => {
    const r = await query(emu, L, { Sorts: [{ Field: 'Flag' }] });
    expect(titles(r.json.Data)).toEqual(['bravo', 'delta', 'foxtrot', 'alpha', 'charlie', 'echo']);
    const ids = r.json.Data.map((i) => BigInt(String(i['ListDataID'])));
    expect(ids[0]! < ids[1]! && ids[1]! < ids[2]!).toBe(true);
  });

  it('sorts by date-time and Created descending', async () => {
    const r = await query(emu, L, { Filters: [{ Field: 'When', Type: 7 }], Sorts: [{ Field: 'When', Desc: true }] });
    expect(titles(r.json.Data)).toEqual(['bravo', 'alpha', 'echo', 'charlie', 'foxtrot']);
    const c = await query(emu, L, { Sorts: [{ Field: 'Created', Desc: true }] });
    expect(titles(c.json.Data)).toEqual(['foxtrot', 'echo', 'delta', 'charlie', 'bravo', 'alpha']);
  });

  it('without Sorts, items come in ListDataID order', async () => {
    const r = await query(emu, L, {});
    const ids = r.json.Data.map((i) => BigInt(String(i['ListDataID'])));
    expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
  });
});

describe('indexed fields only', () => {
  it('a filter on a non-indexed field answers 40001 naming the field', async () => {
    const r = await query(emu, L, { Filters: [{ Field: 'Notes', Type: 0, Value: 'n1' }] });
    expect(r.status).toBe(200);
    expect(r.json.Status).toBe(40001);
    expect(r.json.Message).toContain('Notes');
  });

  it('a sort on a non-indexed field answers 40001 naming the field', async () => {
    const r = await query(emu, L, { Sorts: [{ Field: 'RowVersion' }] });
    expect(r.json.Status).toBe(40001);
    expect(r.json.Message).toContain('RowVersion');
  });

  it('ListDataID, Created, Modified and Title are indexed', async () => {
    for (const Field of ['ListDataID', 'Created', 'Modified', 'Title']) {
      const r = await query(emu, L, { Sorts: [{ Field }], Filters: [{ Field, Type: 7 }] });
      expect(r.json.Status, Field).toBe(0);
      expect(r.json.TotalCount).toBe(6);
    }
  });
});

describe('projection and paging', () => {
  it('Fields selects values; ListDataID and RowVersion always come back', async () => {
    const r = await query(emu, L, { Fields: ['Title', 'Color'], PageSize: 1 });
    expect(Object.keys(r.json.Data[0]!)).toEqual(['ListDataID', 'RowVersion', 'Title', 'Color']);
  });

  it('without Fields every field comes back, system fields included, values as strings', async () => {
    const r = await query(emu, L, { Filters: [{ Field: 'Title', Type: 0, Value: 'echo' }] });
    const item = r.json.Data[0]!;
    expect(item).toMatchObject({
      RowVersion: 3,
      Title: 'echo',
      Num: 'abc',
      Flag: '1',
      Tags: '["c"]',
      Created: '2026-01-03 12:00:00',
      Modified: '2026-01-04 12:00:00',
    });
    expect(Object.keys(item)).toEqual([
      'ListDataID',
      'RowVersion',
      'Title',
      'Text1',
      'Num',
      'Price',
      'Day',
      'When',
      'Flag',
      'Tags',
      'Color',
      'Notes',
      'Created',
      'Modified',
      'CreatedBy',
      'ModifiedBy',
    ]);
    expect(typeof item['ListDataID']).toBe('string');
  });

  it('pages are 1-based with TotalCount; the last page is partial; past the end is empty', async () => {
    const M = 'qa/many';
    const p1 = await query(emu, M, { PageIndex: 1, PageSize: 20 });
    const p3 = await query(emu, M, { PageIndex: 3, PageSize: 20 });
    const p4 = await query(emu, M, { PageIndex: 4, PageSize: 20 });
    expect([p1.json.Data.length, p3.json.Data.length, p4.json.Data.length]).toEqual([20, 5, 0]);
    expect([p1.json.TotalCount, p3.json.TotalCount, p4.json.TotalCount]).toEqual([45, 45, 45]);
    expect(p4.json.Status).toBe(0);
    const p0 = await query(emu, M, { PageIndex: 0, PageSize: 20 });
    expect(p0.json.Data).toEqual(p1.json.Data);
    const all = await query(emu, M, {});
    expect(all.json.Data.length).toBe(20);
  });

  it('PageSize 1000 is fine; 1001 and 0 answer 40000 naming PageSize', async () => {
    expect((await query(emu, 'qa/many', { PageSize: 1000 })).json.Data.length).toBe(45);
    for (const PageSize of [1001, 0, -1, 2.5]) {
      const r = await query(emu, 'qa/many', { PageSize });
      expect(r.status).toBe(200);
      expect(r.json.Status).toBe(40000);
      expect(r.json.Message).toContain('PageSize');
    }
  });

  it('paging is offset-based on the current data: a delete shifts later pages', async () => {
    const M = 'qa/many';
    const p1 = await query(emu, M, { PageIndex: 1, PageSize: 10 });
    const before2 = await query(emu, M, { PageIndex: 2, PageSize: 10 });
    await emu.admin.deleteItem('qa', 'many', String(p1.json.Data[0]!['ListDataID']));
    const after2 = await query(emu, M, { PageIndex: 2, PageSize: 10 });
    expect(after2.json.TotalCount).toBe(44);
    expect(after2.json.Data[0]).toEqual(before2.json.Data[1]);
  });

  it('the documented example request works as-is', async () => {
    const r = await query(emu, L, {
      Fields: ['Title', 'Text1', 'Created'],
      Filters: [{ Field: 'Created', Type: 3, Value: '2026-01-01' }],
      Sorts: [{ Field: 'Created', Desc: true }],
      PageIndex: 1,
      PageSize: 20,
    });
    expect(r.status).toBe(200);
    expect(r.json.Status).toBe(0);
    expect(r.json.TotalCount).toBe(3);
    expect(r.json.Data.map((i) => [i['Title'], i['Text1'], i['Created']])).toEqual([
      ['foxtrot', 'Banana split', '2026-01-10 13:00:00'],
      ['echo', 'apricot', '2026-01-03 12:00:00'],
      ['delta', '', '2026-01-02 11:00:00'],
    ]);
  });
});
