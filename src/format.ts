/** Plain-text tables and durations for the CLI. */

export function table(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = rows.map((r) => r.map(cell));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/** `2026-01-02 03:04:05Z`: the one way the CLI prints a moment. */
export function timestamp(d: Date): string {
  return d
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}

const people = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

/** `1,234,567`: how numbers read in human output (JSON lines keep plain numbers). */
export function humanNumber(n: number): string {
  return people.format(n);
}

/** `1 page`, `3 pages`, `1,200 pages`. */
export function plural(n: number, word: string, many = `${word}s`): string {
  return `${humanNumber(n)} ${n === 1 ? word : many}`;
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (v instanceof Date) return timestamp(v);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export function duration(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d${String(h % 24).padStart(2, '0')}h`;
}
