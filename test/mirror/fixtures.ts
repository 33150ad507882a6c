/** An orders-like list for the mirror tests (and the benchmark). */
import type { FieldMeta, Item } from '../../src/platform/types.js';

export const ORDERS_FIELDS: FieldMeta[] = [
  { FieldName: 'ListDataID', FieldType: 'Text', Type: 'id', IsSystem: true, IsIndex: true },
  { FieldName: 'Title', FieldType: 'Text', Type: 'input', IsSystem: true, IsIndex: true },
  { FieldName: 'OrderDate', FieldType: 'Datetime', Type: 'datepicker', Rules: '{"DateFormat":"yyyy-MM-dd"}', IsIndex: true },
  { FieldName: 'DeliveredAt', FieldType: 'Datetime', Type: 'datepicker', Rules: { DateFormat: 'yyyy-MM-dd HH:mm:ss' } },
  { FieldName: 'Amount', FieldType: 'Decimal', Type: 'input_number' },
  { FieldName: 'Quantity', FieldType: 'Bigint', Type: 'input_number' },
  { FieldName: 'Paid', FieldType: 'Bit', Type: 'switch' },
  { FieldName: 'Tags', FieldType: 'Text', Type: 'checkbox' },
  { FieldName: 'Customer', FieldType: 'Text', Type: 'lookup' },
  { FieldName: 'Status', FieldType: 'Text', Type: 'flowstatus' },
  { FieldName: 'Attachment', FieldType: 'File', Type: 'upload' },
  { FieldName: 'Notes', FieldType: 'Text', Type: 'textarea' },
  { FieldName: 'RowVersion', FieldType: 'Bigint', Type: 'version', IsSystem: true },
  { FieldName: 'Created', FieldType: 'Datetime', Type: 'datepicker', IsSystem: true, IsIndex: true },
  { FieldName: 'Modified', FieldType: 'Datetime', Type: 'datepicker', IsSystem: true, IsIndex: true },
  { FieldName: 'CreatedBy', FieldType: 'Text', Type: 'input', IsSystem: true },
  { FieldName: 'ModifiedBy', FieldType: 'Text', Type: 'input', IsSystem: true },
];

/** A 19-digit platform id (beyond 2^53) for item number n. */
export function orderId(n: number): string {
  return (7_000_000_000_000_000_000n + BigInt(n)).toString();
}

export function orderItem(n: number, version = 1, overrides: Partial<Item> = {}): Item {
  const day = String((n % 28) + 1).padStart(2, '0');
  return {
    ListDataID: orderId(n),
    Title: `Order ${n}`,
    OrderDate: `2026-03-${day}`,
    DeliveredAt: `2026-03-${day} 1${n % 10}:0${n % 6}:3${n % 10}`,
    Amount: `${n}.${String(n % 100).padStart(2, '0')}`,
    Quantity: String(9_007_199_254_740_993n + BigInt(n)),
    Paid: n % 2 ? '1' : '0',
    Tags: n % 3 ? '["red","blue"]' : '[]',
    Customer: orderId(n % 50),
    Status: 'Open',
    Attachment: '',
    Notes: n % 5 ? `note ${n}` : '',
    RowVersion: version,
    Created: `2026-03-${day} 09:00:00`,
    Modified: `2026-03-${day} 10:${String(version % 60).padStart(2, '0')}:00`,
    CreatedBy: 'u1',
    ModifiedBy: 'u2',
    ...overrides,
  };
}

export const ORDERS_LIST = { name: 'orders', appID: 'app1', listID: 'list1', table: 'orders' };

/** `ensureMirrorTable` options for the orders list in schema `mirror` (its fields, or others given). */
export const ordersTable = (fields: FieldMeta[] = ORDERS_FIELDS) => ({
  schema: 'mirror',
  list: ORDERS_LIST,
  fields,
  idField: 'ListDataID',
  versionField: 'RowVersion',
});
