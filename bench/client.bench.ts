/**
 * Benchmark: page a 100,000-item list at 1000 items per page through the
 * PlatformClient against the emulator with 200 ms latency and the default
 * rate limit (burst 10, 10/s). Reports throughput, how close the request rate
 * came to the limit, and what the emulator saw (429s, busiest sliding second,
 * requests in flight at once).
 *
 * The emulator runs in a child process, as the platform is remote in real
 * use: in the same process, serialising 100k-item pages and its garbage
 * collection stall the client's event loop for tens of milliseconds at a
 * time, which measures the emulator rather than the client. Set
 * BENCH_EMULATOR_IN_PROCESS=1 to run it in-process anyway.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EmulatorAdminClient, startEmulator } from '../src/emulator/index.js';
import { PlatformClient } from '../src/platform/client.js';

const ITEMS = 100_000;
const PAGE_SIZE = 1000;
const LIMIT = 10;
const LATENCY_MS = 200;

interface Emulator {
  baseUrl: string;
  apiKey: string;
  admin: EmulatorAdminClient;
  close(): Promise<void>;
}

async function emulatorInChild(): Promise<Emulator> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const entry = fileURLToPath(new URL('../src/emulator/index.ts', import.meta.url));
  const code = `
    const { startEmulator } = await import(${JSON.stringify(entry)});
    const emu = await startEmulator({ port: 0, sample: true, items: ${ITEMS}, faults: { latencyMs: ${LATENCY_MS} } });
    process.stdout.write(JSON.stringify({ url: emu.url, baseUrl: emu.baseUrl, apiKey: emu.apiKey }) + '\\n');
    process.stdin.on('end', () => emu.close().then(() => process.exit(0)));
    process.stdin.resume();
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const info = await new Promise<{ url: string; baseUrl: string; apiKey: string }>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as { url: string; baseUrl: string; apiKey: string });
    });
    child.on('error', reject);
    child.on('exit', (c) => reject(new Error(`emulator child exited with ${c}`)));
  });
  return {
    baseUrl: info.baseUrl,
    apiKey: info.apiKey,
    admin: new EmulatorAdminClient(info.url),
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.stdin.end();
      }),
  };
}

export default async function run(): Promise<Record<string, string | number>> {
  const inProcess = process.env.BENCH_EMULATOR_IN_PROCESS === '1';
  const emu: Emulator = inProcess
    ? await startEmulator({ port: 0, sample: true, items: ITEMS, faults: { latencyMs: LATENCY_MS } })
    : await emulatorInChild();
  const client = new PlatformClient({
    config: {
      baseUrl: emu.baseUrl,
      apiKey: emu.apiKey,
      timeZone: 'UTC',
      requestsPerSecond: LIMIT,
      maxInFlight: 8,
      timeoutMs: 30_000,
      retries: 6,
      maxRetryAfterSeconds: 120,
    },
  });
  try {
    await emu.admin.clearRequests();
    let items = 0;
    let pages = 0;
    const started = performance.now();
    for await (const page of client.pages('demo', 'orders', {}, { pageSize: PAGE_SIZE })) {
      items += page.items.length;
      pages++;
    }
    const seconds = (performance.now() - started) / 1000;
    const stats = await emu.admin.stats();
    const starts = (await emu.admin.requests()).map((e) => e.startedAt).sort((a, b) => a - b);
    // The rate as the server saw it, from the first arrival to the last.
    const serverRate = starts.length > 1 ? ((starts.length - 1) / (starts.at(-1)! - starts[0]!)) * 1000 : 0;
    const s = client.stats();
    return {
      emulator: inProcess ? 'in process' : 'child process',
      items,
      pages,
      seconds: round(seconds, 2),
      itemsPerSecond: Math.round(items / seconds),
      requests: s.requests,
      retries: s.retries,
      requestsPerSecond: round(s.requests / seconds, 2),
      requestsPerSecondAtServer: round(serverRate, 2),
      achievedToLimit: round(serverRate / LIMIT, 3),
      emulator429s: stats.rateLimited,
      maxPerSlidingSecond: stats.maxPerSlidingSecond,
      maxInFlight: stats.maxInFlight,
    };
  } finally {
    await client.close();
    await emu.close();
  }
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
