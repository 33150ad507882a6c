import { describe, expect, it } from 'vitest';
import { snowflakeId } from '../../src/emulator/ids.js';
import { PlatformZone, civilFromDays, daysFromCivil, formatNaive, parseDay, parseNaive } from '../../src/emulator/platform-time.js';
import { Prng } from '../../src/emulator/prng.js';
import { radixSortSlots } from '../../src/emulator/radix-sort.js';
import { startEmulator } from '../../src/emulator/index.js';
import { call } from './helpers.js';

describe('platform time', () => {
  it('converts days and civil dates both ways', () => {
    for (const [y, m, d] of [
      [1970, 1, 1],
      [2000, 2, 29],
      [2024, 12, 31],
      [2026, 3, 29],
      [1969, 12, 31],
    ] as const) {
      expect(civilFromDays(daysFromCivil(y, m, d))).toEqual([y, m, d]);
    }
    expect(daysFromCivil(1970, 1, 1)).toBe(0);
    expect(formatNaive(daysFromCivil(2026, 1, 5) * 86400 + 23 * 3600 + 4 * 60 + 5)).toBe('2026-01-05 23:04:05');
  });

  it('parses strict dates and wall-clock date-times', () => {
    expect(parseDay('2026-02-28')).toBe(daysFromCivil(2026, 2, 28));
    expect(parseDay('2026-02-29')).toBeUndefined();
    expect(parseDay('2026-1-5')).toBeUndefined();
    expect(parseNaive('2026-01-05 10:20:30')).toBe(daysFromCivil(2026, 1, 5) * 86400 + 37230);
    expect(parseNaive('2026-01-05T10:20')).toBe(daysFromCivil(2026, 1, 5) * 86400 + 37200);
    expect(parseNaive('2026-01-05 24:00:00')).toBeUndefined();
  });

  it('applies the zone offset, DST included', () => {
    const berlin = new PlatformZone('Europe/Berlin');
    expect(berlin.format(Date.parse('2026-01-15T12:00:00Z'))).toBe('2026-01-15 13:00:00');
    expect(berlin.format(Date.parse('2026-07-15T12:00:00Z'))).toBe('2026-07-15 14:00:00');
    expect(berlin.format(Date.parse('2026-03-28T23:30:00Z'))).toBe('2026-03-29 00:30:00');
    expect(formatNaive(berlin.parseTimestamp('2026-07-15T12:00:00Z')!)).toBe('2026-07-15 14:00:00');
    expect(formatNaive(berlin.parseTimestamp('2026-07-15 12:00:00')!)).toBe('2026-07-15 12:00:00');
    expect(berlin.msFromNaive(berlin.naiveFromMs(Date.parse('2026-07-15T12:00:00Z')))).toBe(Date.parse('2026-07-15T12:00:00Z'));
    expect(() => new PlatformZone('Mars/Base')).toThrow(/time zone/);
  });
});

describe('ids', () => {
  it('are 19 digits, grow with time and never survive a round trip through a JS number', () => {
    const a = snowflakeId(Date.parse('2020-01-01T00:00:00Z'), 0);
    const b = snowflakeId(Date.parse('2020-01-01T00:00:00.001Z'), 0);
    const c = snowflakeId(Date.parse('2020-01-01T00:00:00.001Z'), 1);
    expect([a, b, c].map((x) => x.toString().length)).toEqual([19, 19, 19]);
    expect(a < b && b < c).toBe(true);
    for (const id of [a, b, c]) expect(BigInt(Number(id))).not.toBe(id);
  });
});

describe('radix sort', () => {
  it('matches a stable comparator sort', () => {
    const prng = new Prng(3);
    for (const n of [0, 1, 2, 50, 5000]) {
      const slots = Int32Array.from({ length: n }, (_, i) => i);
      const keys = Uint32Array.from({ length: n }, () => (prng.chance(0.3) ? prng.int(5) : prng.int(0xfffffff)));
      const expected = Array.from(slots).sort((x, y) => keys[x]! - keys[y]! || x - y);
      expect(Array.from(radixSortSlots(slots, keys))).toEqual(expected);
    }
  });
});

describe('lifecycle', () => {
  it('close() is prompt with a request held by a timeout fault, activity running and a webhook pending', async () => {
    const emu = await startEmulator({
      port: 0,
      items: 50,
      rateLimit: false,
      faults: { timeoutRate: 1, timeoutMs: 60_000 },
      activity: { appID: 'demo', listID: 'orders', editsPerSecond: 20 },
    });
    const pending = call(emu, 'GET', '/lists/demo/orders').catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    await emu.close();
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(await pending).toBeInstanceOf(Error);
    await emu.close();
  });
});
