/**
 * Many small lists in one application, for the emulator's seed and the
 * config: `fleet/l001`... each with a few fields and generated items.
 */
import type { SeedFile } from '../../src/emulator/index.js';

export const FLEET_APP = 'fleet';

export function fleetListId(i: number): string {
  return `l${String(i + 1).padStart(3, '0')}`;
}

/** A seed of `lists` lists of `items` generated items each. */
export function fleetSeed(lists: number, items: number): SeedFile {
  return {
    referenceDate: '2026-11-01',
    lists: Array.from({ length: lists }, (_, i) => ({
      appID: FLEET_APP,
      listID: fleetListId(i),
      title: `Fleet list ${i + 1}`,
      fields: [
        { FieldName: 'Text1', FieldType: 'Text', Type: 'input', DisplayName: 'Code', IsIndex: true },
        { FieldName: 'Text2', FieldType: 'Text', Type: 'textarea', DisplayName: 'Notes' },
        { FieldName: 'Bigint1', FieldType: 'Bigint', Type: 'input_number', DisplayName: 'Quantity' },
      ],
      generate: items,
    })),
  } as SeedFile;
}

/** The config entries of the seed's lists. */
export function fleetConfigLists(lists: number, extra: Record<string, unknown> = {}): Record<string, unknown>[] {
  return Array.from({ length: lists }, (_, i) => ({ name: `fleet_${fleetListId(i)}`, appID: FLEET_APP, listID: fleetListId(i), ...extra }));
}
