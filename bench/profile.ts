/**
 * `npm run bench:profile <name>`: runs one benchmark under `node --cpu-prof`
 * and prints where listsync's main thread spent its time: the functions with
 * the most self time, then the files, as shares of the busy time (idle time,
 * waiting for PostgreSQL or the platform, is shown apart). The emulator runs
 * in a child process and is not in the profile.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const TOP = 25;

function main(): void {
  const name = process.argv[2];
  if (!name) {
    console.error('usage: npm run bench:profile <benchmark>   (e.g. pipeline, upsert, pull)');
    process.exit(2);
  }
  const dir = mkdtempSync(join(tmpdir(), 'listsync-prof-'));
  try {
    const runner = fileURLToPath(new URL('./run.ts', import.meta.url));
    const run = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', runner, name], { stdio: 'inherit' });
    if (run.status !== 0) process.exitCode = run.status ?? 1;
    const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
    if (files.length === 0) throw new Error('node wrote no profile');
    // The benchmark's own process writes the biggest profile (workers, if any, write their own).
    const biggest = files.map((f) => join(dir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
    summarize(JSON.parse(readFileSync(biggest, 'utf8')) as Profile);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function summarize(profile: Profile): void {
  const selfMs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfMs.set(id, (selfMs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let idle = 0;
  let busy = 0;
  for (const node of profile.nodes) {
    const ms = selfMs.get(node.id) ?? 0;
    if (ms === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += ms;
      continue;
    }
    busy += ms;
    const file = shortUrl(url) || functionName || '(native)';
    const fn = `${functionName || '(anonymous)'}${url ? ` ${shortUrl(url)}:${lineNumber + 1}` : ''}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + ms);
    byFile.set(file, (byFile.get(file) ?? 0) + ms);
  }
  console.log(`\n== profile of the main thread: ${ms(busy)} busy, ${ms(idle)} idle (waiting for I/O)`);
  table('self time by function', byFunction, busy);
  table('self time by file', byFile, busy);
}

function table(title: string, totals: Map<string, number>, busy: number): void {
  console.log(`\n  ${title} (share of busy time)`);
  for (const [key, value] of [...totals].sort((a, b) => b[1] - a[1]).slice(0, TOP))
    console.log(`  ${ms(value).padStart(9)}  ${((100 * value) / busy).toFixed(1).padStart(5)}%  ${key}`);
}

function shortUrl(url: string): string {
  return url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules\/.+|src\/.+|bench\/.+)$/, '$1');
}

const ms = (v: number): string => `${Math.round(v).toLocaleString('en-US')} ms`;

main();
