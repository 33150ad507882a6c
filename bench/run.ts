/**
 * `npm run bench [name...]`: runs bench/<name>.bench.ts files (all by default)
 * one after another and prints the figures each returns.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

type Figures = Record<string, string | number>;

const dir = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.includes(f.replace(/\.bench\.ts$/, '')))
  .sort();

if (files.length === 0) {
  console.error(`no benchmark matches ${wanted.join(', ')}; have: ${readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).join(', ')}`);
  process.exit(2);
}

let failed = 0;
for (const file of files) {
  const name = file.replace(/\.bench\.ts$/, '');
  console.log(`\n== ${name}`);
  try {
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { default: () => Promise<Figures> };
    const figures = await mod.default();
    const width = Math.max(...Object.keys(figures).map((k) => k.length));
    for (const [k, v] of Object.entries(figures)) console.log(`  ${k.padEnd(width)}  ${typeof v === 'number' ? formatNumber(v) : v}`);
  } catch (err) {
    failed++;
    console.error(`  FAILED: ${(err as Error).stack ?? String(err)}`);
  }
}
process.exit(failed ? 1 : 0);

function formatNumber(n: number): string {
  if (Number.isInteger(n)) return n.toLocaleString('en-US');
  return n.toLocaleString('en-US', { maximumFractionDigits: 3 });
}
