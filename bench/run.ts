/**
 * `npm run bench [name...]`: runs bench/<name>.bench.ts files (all by default)
 * one after another and prints the figures each returns.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';
import { BARS, judge } from './bars.js';

type Figures = Record<string, string | number>;

const dir = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.bench\.ts$/, '')))
  .sort();

if (files.length === 0) {
  console.error(
    `no benchmark matches ${wanted.join(', ')}; have: ${readdirSync(dir)
      .filter((f) => f.endsWith('.bench.ts'))
      .join(', ')}`,
  );
  process.exit(2);
}

let failed = 0;
const results = new Map<string, Figures>();
for (const file of files) {
  const name = file.replace(/\.bench\.ts$/, '');
  console.log(`\n== ${name}`);
  try {
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { default: () => Promise<Figures> };
    const figures = await mod.default();
    results.set(name, figures);
    const width = Math.max(...Object.keys(figures).map((k) => k.length));
    for (const [k, v] of Object.entries(figures)) console.log(`  ${k.padEnd(width)}  ${typeof v === 'number' ? formatNumber(v) : v}`);
  } catch (err) {
    failed++;
    console.error(`  FAILED: ${(err as Error).stack ?? String(err)}`);
  }
}
printSummary();
process.exit(failed ? 1 : 0);

/** One table of every quality bar whose benchmark ran: figure, bar, ratio, met or not. */
function printSummary(): void {
  const ran = BARS.filter((b) => files.includes(`${b.bench}.bench.ts`));
  if (ran.length === 0) return;
  const rows = ran.map((b) => judge(b, results.get(b.bench)));
  const cells = rows.map((r) => [
    r.bench,
    r.figure,
    r.value === undefined ? 'n/a' : formatNumber(r.value),
    `${r.better === 'higher' ? '>=' : '<='} ${formatNumber(r.bar)}`,
    r.ratio === undefined ? '-' : Number.isFinite(r.ratio) ? r.ratio.toFixed(3) : 'inf',
    r.met === undefined ? 'no figure' : r.met ? 'met' : 'NOT MET',
  ]);
  const head = ['bench', 'figure', 'value', 'bar', 'ratio', ''];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) =>
    c
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  console.log(`\n== summary`);
  console.log(line(head));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const c of cells) console.log(line(c));
}

function formatNumber(n: number): string {
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  return n.toLocaleString('en-US', { maximumFractionDigits: 3 });
}
