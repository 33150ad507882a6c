import { describe, expect, it } from 'vitest';
import { assignColumnNames, baseColumnName, objectName, quoteIdent, quoteLiteral, RESERVED_COLUMNS } from '../../src/mirror/naming.js';

describe('baseColumnName', () => {
  it('makes lower snake_case', () => {
    expect(baseColumnName('OrderDate')).toBe('order_date');
    expect(baseColumnName('Text1')).toBe('text1');
    expect(baseColumnName('Datetime1')).toBe('datetime1');
    expect(baseColumnName('HTTPCode')).toBe('http_code');
    expect(baseColumnName('ListDataID')).toBe('list_data_id');
    expect(baseColumnName('already_snake')).toBe('already_snake');
    expect(baseColumnName('Line Manager (old)')).toBe('line_manager_old');
  });

  it('turns a hostile name into a harmless identifier', () => {
    const c = baseColumnName('x"; drop table y; --');
    expect(c).toBe('x_drop_table_y');
    expect(c).toMatch(/^[a-z0-9_]+$/);
  });

  it('handles names without usable characters, leading digits and great length', () => {
    expect(baseColumnName('订单日期')).toBe('订单日期');
    expect(baseColumnName('★☆')).toMatch(/^f_[0-9a-f]{8}$/);
    expect(baseColumnName('★☆')).not.toBe(baseColumnName('☆★'));
    expect(baseColumnName('1stField')).toBe('f_1st_field');
    const long = baseColumnName('A'.repeat(40) + 'b'.repeat(60));
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(63);
  });
});

describe('assignColumnNames', () => {
  it('never takes a reserved column or a system column', () => {
    const m = assignColumnNames(['Id', 'RowVersion', 'CreatedAt', '_raw', 'xmin', 'ctid', 'Modified_At']);
    const cols = [...m.values()];
    for (const r of [...RESERVED_COLUMNS, 'xmin', 'ctid']) expect(cols).not.toContain(r);
    expect(m.get('Id')).toBe('id_2');
    expect(m.get('RowVersion')).toBe('row_version_2');
    expect(m.get('_raw')).toBe('raw');
    expect(m.get('xmin')).toBe('xmin_2');
  });

  it('resolves collisions deterministically, whatever the input order', () => {
    const a = assignColumnNames(['OrderDate', 'order_date', 'Order-Date']);
    const b = assignColumnNames(['Order-Date', 'order_date', 'OrderDate']);
    expect(a).toEqual(b);
    expect(new Set(a.values()).size).toBe(3);
    expect([...a.values()].sort()).toEqual(['order_date', 'order_date_2', 'order_date_3']);
  });

  it('keeps stored names and names only the new fields', () => {
    const first = assignColumnNames(['Amount', 'Title']);
    const stored = new Map([...first, ['Gone', 'amount_2']]);
    const next = assignColumnNames(['amount', 'Amount', 'Title', 'NewOne'], stored);
    expect(next.get('Amount')).toBe('amount');
    expect(next.get('Title')).toBe('title');
    expect(next.get('amount')).toBe('amount_3'); // amount and amount_2 are taken
    expect(next.get('NewOne')).toBe('new_one');
  });

  it('keeps suffixed names within 63 bytes and unique', () => {
    const long = 'X'.repeat(70);
    const m = assignColumnNames([long, `${long}_`, `_${long}`]);
    const cols = [...m.values()];
    expect(new Set(cols).size).toBe(3);
    for (const c of cols) expect(Buffer.byteLength(c)).toBeLessThanOrEqual(63);
  });
});

describe('quoting', () => {
  it('quotes identifiers and literals', () => {
    expect(quoteIdent('a"b')).toBe('"a""b"');
    expect(quoteLiteral("it's")).toBe("'it''s'");
    expect(quoteLiteral('why?')).toBe("'why\\?'");
    expect(() => quoteIdent('')).toThrow();
    expect(() => quoteIdent('a?b')).toThrow(/"\?"/);
    expect(() => quoteIdent('x'.repeat(64))).toThrow(/63 bytes/);
  });

  it('builds schema-unique object names within 63 bytes', () => {
    expect(objectName('orders', 'modified_at_idx')).toBe('orders_modified_at_idx');
    const a = objectName(`${'t'.repeat(60)}a`, 'modified_at_idx');
    const b = objectName(`${'t'.repeat(60)}b`, 'modified_at_idx');
    expect(a).not.toBe(b);
    expect(Buffer.byteLength(a)).toBeLessThanOrEqual(63);
  });
});
