/**
 * What a worker thread could take off the main thread, measured before
 * building one: one real 1000-item page from the emulator, parsed with
 * JSON.parse on the main thread, against what the main thread would pay to
 * receive the same items from a worker (v8.deserialize, the structured clone
 * postMessage uses) or to send them to one (v8.serialize). When receiving
 * costs as much as parsing, a worker that only parses gains nothing; it has
 * to convert too and hand back bytes.
 *
 *   npm run bench handoff
 */
import v8 from 'node:v8';
import { emulatorProcess } from './support.js';

const ROUNDS = 200;

export default async function run(): Promise<Record<string, string | number>> {
  const emu = await emulatorProcess(['--items', '1000', '--no-rate-limit']);
  try {
    const res = await fetch(`${emu.baseUrl}/lists/demo/orders/items/query`, {
      method: 'POST',
      headers: { apiKey: emu.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ PageIndex: 1, PageSize: 1000 }),
    });
    const text = await res.text();
    const page = JSON.parse(text) as { Data?: unknown };
    const items = itemsOf(page.Data);
    if (items !== 1000) throw new Error(`expected a page of 1000 items, the emulator answered ${res.status}: ${text.slice(0, 200)}`);
    const cloned = v8.serialize(page);
    const parse = msPer(() => JSON.parse(text));
    const receive = msPer(() => v8.deserialize(cloned));
    const send = msPer(() => v8.serialize(page));
    return {
      'page bytes': text.length,
      'items in the page': items,
      'JSON.parse ms per page': round(parse),
      'receive from a worker (v8.deserialize) ms per page': round(receive),
      'send to a worker (v8.serialize) ms per page': round(send),
      'receiving over parsing': round(receive / parse),
    };
  } finally {
    await emu.stop();
  }
}

/** How many items an answer's Data holds: an array, or one in Items/List/Data. */
function itemsOf(data: unknown): number {
  if (Array.isArray(data)) return data.length;
  const inner = data && typeof data === 'object' ? Object.values(data).find(Array.isArray) : undefined;
  return inner?.length ?? 0;
}

/** Mean milliseconds of `fn` over ROUNDS calls, after as many to warm up. */
function msPer(fn: () => unknown): number {
  for (let i = 0; i < ROUNDS; i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < ROUNDS; i++) fn();
  return (performance.now() - t0) / ROUNDS;
}

const round = (n: number): number => Number(n.toFixed(2));
