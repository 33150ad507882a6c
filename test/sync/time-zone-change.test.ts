/**
 * A mirror pulled under the wrong platform.timeZone is repaired by the next
 * run after the config is corrected: the typed date-time columns are
 * re-derived from _raw, with no more query requests than a pull that found
 * nothing to do.
 */
import { afterEach, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { pullList } from '../../src/sync/pull.js';
import { expectMirrorEqualsPlatform, startWorld, type World } from '../helpers/world.js';

let w: World | undefined;
afterEach(async () => {
  await w?.close();
  w = undefined;
});

const queryCount = async (world: World): Promise<number> =>
  (await world.emu.admin.requests()).filter((e) => e.path.endsWith('/items/query')).length;

it('re-derives date-times from _raw when platform.timeZone is corrected, with zero extra query requests', async () => {
  w = await startWorld({ emulator: { items: 1500, timeZone: 'Europe/Berlin' } });
  const list = w.config.lists[0]!;
  expect(w.config.platform.timeZone).toBe('UTC');
  await pullList(w.deps(), list);
  const berlin = parseConfig({ ...structuredClone(w.config), platform: { ...w.config.platform, timeZone: 'Europe/Berlin' } });
  const corrected: World = { ...w, config: berlin, deps: () => ({ ...w!.deps(), config: berlin }) };
  // Under the wrong zone every date-time is an hour or two off.
  await expect(expectMirrorEqualsPlatform(corrected)).rejects.toThrow();

  await w.emu.admin.clearRequests();
  const repaired = await pullList(corrected.deps(), list);
  const repairQueries = await queryCount(w);
  expect(repaired.status).toBe('succeeded');
  expect(repaired.schemaChanges).toEqual([
    expect.stringMatching(
      /re-derived created_at, modified_at, order_date, shipped_at of 1500 row\(s\) from _raw \(platform\.timeZone changed from UTC to Europe\/Berlin\)/,
    ),
  ]);
  expect(await expectMirrorEqualsPlatform(corrected)).toBe(1500);

  await w.emu.admin.clearRequests();
  const idle = await pullList(corrected.deps(), list);
  expect(idle.schemaChanges).toEqual([]);
  expect(repairQueries).toBe(await queryCount(w));
});
