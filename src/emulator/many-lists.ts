/**
 * Many small lists for capacity tests and the `many-lists` bench: `lists`
 * lists `bench/l001`, `bench/l002`, ... of `items` generated items each,
 * with four fields (a name, a number, a date, a status), added to whatever
 * the seed defines. Items are generated as for any seed list (`generate`),
 * rows held as compact string arrays, so 100 lists of 1,000 items stay small
 * (test/emulator/many-lists.test.ts).
 */
import type { SeedFile } from './seed.js';

export const MANY_LISTS_APP_ID = 'bench';

/** The list ID of the i-th (1-based) generated list. */
export const manyListId = (i: number): string => `l${String(i).padStart(3, '0')}`;

const FIELDS = [
  { FieldName: 'Text1', Type: 'input', FieldType: 'Text', DisplayName: 'Name', IsIndex: true },
  { FieldName: 'Bigint1', Type: 'input_number', FieldType: 'Bigint', DisplayName: 'Quantity' },
  { FieldName: 'Datetime1', Type: 'datepicker', FieldType: 'Datetime', DisplayName: 'Due', Rules: { DateFormat: 'yyyy-MM-dd' } },
  { FieldName: 'Text2', Type: 'select', FieldType: 'Text', DisplayName: 'Status', Rules: { Options: ['Open', 'Done'] } },
];

/** The seed with `lists` generated lists of `items` items each appended. */
export function withManyLists(seed: SeedFile | undefined, lists: number, items: number): SeedFile {
  const generated = Array.from({ length: lists }, (_, k) => ({
    appID: MANY_LISTS_APP_ID,
    listID: manyListId(k + 1),
    title: `Bench list ${k + 1}`,
    fields: FIELDS,
    generate: items,
  }));
  return { ...(seed ?? {}), lists: [...(seed?.lists ?? []), ...generated] };
}
