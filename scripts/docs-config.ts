/**
 * Keeps the keys table of docs/configuration.md one row per key the schema
 * accepts, in the schema's order (npm run docs:config): a new key gets a row
 * with its default and an empty meaning to write, a key gone from the schema
 * loses its row, every other row is kept as written. The meanings live in
 * the table itself; test/docs.test.ts fails while a key has no row, a row has
 * no meaning, or the table is not in this shape.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configKeyPaths, parseConfig } from '../src/config.js';

export const CONFIG_DOC = fileURLToPath(new URL('../docs/configuration.md', import.meta.url));
const BEGIN = '<!-- BEGIN GENERATED: one row per config key; add and remove rows with `npm run docs:config` -->';
const END = '<!-- END GENERATED -->';
const HEADER = '| key | default | meaning |\n| --- | --- | --- |';

export interface KeyRow {
  key: string;
  default: string;
  meaning: string;
}

/** The rows of the block, by key (a row's first cell is one key in backticks). */
export function readRows(doc: string): KeyRow[] {
  const block = between(doc);
  if (block === undefined) throw new Error(`${CONFIG_DOC} lacks the markers ${BEGIN} ... ${END}`);
  return block
    .split('\n')
    .filter((line) => /^\| `/.test(line))
    .map((line) => {
      // Cells split on pipes not escaped (a meaning may hold `a \| b`).
      const cells = line.split(/(?<!\\)\|/).slice(1, -1);
      return { key: cells[0]!.trim().replace(/^`|`$/g, ''), default: cells[1]!.trim(), meaning: cells.slice(2).join('|').trim() };
    });
}

/** A new key's default, read from what the schema fills in for a minimal config. */
function defaultOf(key: string): string {
  const parsed = parseConfig({
    platform: { baseUrl: 'https://x.example/v1', apiKey: 'k' },
    database: { url: 'postgres://h/db' },
    lists: [{ name: 'l', appID: 'a', listID: 'b' }],
  }) as unknown as Record<string, unknown>;
  const [section, name] = key.replace('[]', '.0').split(/\.(?=[^.]+$)/) as [string, string | undefined];
  let at: unknown = parsed;
  for (const step of section.split('.')) at = (at as Record<string, unknown> | undefined)?.[step];
  const value = name === undefined ? at : (at as Record<string, unknown> | undefined)?.[name];
  return value === undefined ? 'none' : `\`${JSON.stringify(value)}\``;
}

/** The table the block should hold: the schema's keys in order, rows kept where they exist. */
export function expectedRows(existing: readonly KeyRow[]): KeyRow[] {
  const byKey = new Map(existing.map((r) => [r.key, r]));
  return configKeyPaths().map((key) => byKey.get(key) ?? { key, default: defaultOf(key), meaning: '' });
}

export function renderRows(rows: readonly KeyRow[]): string {
  return [HEADER, ...rows.map((r) => `| \`${r.key}\` | ${r.default} | ${r.meaning} |`)].join('\n');
}

function between(doc: string): string | undefined {
  const start = doc.indexOf(BEGIN);
  const end = doc.indexOf(END, start);
  return start === -1 || end === -1 ? undefined : doc.slice(start + BEGIN.length, end);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const doc = readFileSync(CONFIG_DOC, 'utf8');
  const existing = readRows(doc);
  const rows = expectedRows(existing);
  const start = doc.indexOf(BEGIN) + BEGIN.length;
  const next = `${doc.slice(0, start)}\n\n${renderRows(rows)}\n\n${doc.slice(doc.indexOf(END, start))}`;
  const added = rows.filter((r) => !existing.some((e) => e.key === r.key)).map((r) => r.key);
  const removed = existing.filter((e) => !rows.some((r) => r.key === e.key)).map((e) => e.key);
  writeFileSync(CONFIG_DOC, next);
  console.log(`${CONFIG_DOC}: ${rows.length} keys; added ${added.join(', ') || 'none'}; removed ${removed.join(', ') || 'none'}`);
  if (added.length) console.log(`write the meaning of ${added.join(', ')} in the table`);
}
