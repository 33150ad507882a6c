/** `--lists N --items M`: N generated lists of M items each, over HTTP like any list; the sample list only when asked. */
import { afterEach, describe, expect, it } from 'vitest';
import { emulatorOptionsFromCli } from '../../src/emulator/command.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';

let emu: RunningEmulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

const query = async (e: RunningEmulator, listID: string) => {
  const res = await fetch(`${e.baseUrl}/lists/bench/${listID}/items/query`, {
    method: 'POST',
    headers: { apiKey: e.apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ PageIndex: 1, PageSize: 5 }),
  });
  return (await res.json()) as { Status: number; TotalCount: number; Data: Record<string, unknown>[] };
};

describe('emulator --lists', () => {
  it('serves N generated lists of M items, without the sample list', async () => {
    emu = await startEmulator(emulatorOptionsFromCli({ port: 0, host: '127.0.0.1', lists: 12, items: 40 }));
    for (const id of ['l001', 'l007', 'l012']) {
      const page = await query(emu, id);
      expect(page).toMatchObject({ Status: 0, TotalCount: 40 });
      expect(page.Data[0]).toHaveProperty('Text1');
      expect(page.Data[0]).toHaveProperty('Bigint1');
    }
    expect((await query(emu, 'l013')).Status).not.toBe(0);
    const sample = await fetch(`${emu.baseUrl}/lists/demo/orders/items/query`, {
      method: 'POST',
      headers: { apiKey: emu.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ PageIndex: 1, PageSize: 1 }),
    });
    expect(((await sample.json()) as { Status: number }).Status).not.toBe(0);
  });

  it('keeps the sample list with --sample', async () => {
    emu = await startEmulator(emulatorOptionsFromCli({ port: 0, host: '127.0.0.1', lists: 2, items: 5, sample: true }));
    expect((await query(emu, 'l002')).TotalCount).toBe(5);
    expect((await emu.admin.exportList('demo', 'orders')).items.length).toBeGreaterThan(0);
  });
});
