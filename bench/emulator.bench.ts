/**
 * Emulator at scale: seeds 1,000,000 sample items, then pages
 * `Modified >= <400 days ago>` sorted by Created with PageSize 1000 over HTTP
 * and reports the server-side time per page from the request log.
 */
import { startEmulator } from '../src/emulator/index.js';

const ITEMS = 1_000_000;
const PAGES = 50;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

const round = (n: number): number => Math.round(n * 100) / 100;

export default async function run(): Promise<Record<string, string | number>> {
  const referenceDate = new Date(Date.UTC(2026, 0, 1));
  const t0 = performance.now();
  const emu = await startEmulator({ port: 0, items: ITEMS, rateLimit: false, referenceDate });
  const seedSeconds = (performance.now() - t0) / 1000;
  const mem = process.memoryUsage();
  try {
    const since = new Date(referenceDate.getTime() - 400 * 86_400_000).toISOString().slice(0, 10);
    const query = (pageIndex: number): Promise<Response> =>
      fetch(`${emu.baseUrl}/lists/demo/orders/items/query`, {
        method: 'POST',
        headers: { apiKey: emu.apiKey, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          Filters: [{ Field: 'Modified', Type: 2, Value: since }],
          Sorts: [{ Field: 'Created', Desc: false }],
          PageIndex: pageIndex,
          PageSize: 1000,
        }),
      });
    let total = 0;
    let bytes = 0;
    const tc0 = performance.now();
    for (let p = 1; p <= PAGES; p++) {
      const res = await query(p);
      const text = await res.text();
      bytes += text.length;
      if (p === 1) total = (JSON.parse(text) as { TotalCount: number }).TotalCount;
    }
    const clientMs = performance.now() - tc0;
    const log = (await emu.admin.requests()).filter((e) => e.route.endsWith('/items/query'));
    const times = log.map((e) => (e.finishedAt ?? e.startedAt) - e.startedAt);
    const first = times[0] ?? NaN;
    const warm = times.slice(1).sort((a, b) => a - b);
    return {
      items: ITEMS,
      'seed seconds': round(seedSeconds),
      'RSS after seeding (MB)': Math.round(mem.rss / 1048576),
      'JS heap used after seeding (MB)': Math.round(mem.heapUsed / 1048576),
      'matching items (TotalCount)': total,
      pages: PAGES,
      'page 1 server ms (cold, builds the cache)': round(first),
      'pages 2.. server ms p50': round(percentile(warm, 50)),
      'pages 2.. server ms p95': round(percentile(warm, 95)),
      'pages 2.. server ms max': round(warm[warm.length - 1] ?? NaN),
      'client ms per page (round trip, body read)': round(clientMs / PAGES),
      'KB per page': Math.round(bytes / PAGES / 1024),
    };
  } finally {
    await emu.close();
  }
}
