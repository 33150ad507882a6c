/**
 * Log lines for people: on a terminal each pino JSON line becomes one short
 * line, `12:03:04 WARN  orders pull: message  key=value ...`, the level
 * coloured. Machines (not a TTY, or `--log-format json`) get the JSON lines.
 */
import type { DestinationStream } from 'pino';

export type LogFormat = 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/** JSON unless asked otherwise, or pretty when stderr (where logs go) is a terminal. */
export function resolveLogFormat(asked: string | undefined, isTTY = Boolean(process.stderr.isTTY)): LogFormat {
  if (asked === 'json' || asked === 'pretty') return asked;
  return isTTY ? 'pretty' : 'json';
}

const COLOURS: Record<string, string> = {
  fatal: '\x1b[31m',
  error: '\x1b[31m',
  warn: '\x1b[33m',
  info: '\x1b[32m',
  debug: '\x1b[90m',
  trace: '\x1b[90m',
};
const RESET = '\x1b[0m';
/** Keys shown in front of the message or not at all. */
const HIDDEN = new Set(['time', 'level', 'name', 'msg', 'list', 'job', 'runId', 'pid', 'hostname', 'err']);
/** At most this many key=value pairs follow the message: a line stays a line. */
const MAX_FIELDS = 6;

/** One pino JSON line as one human line (without a trailing newline). Lines that are not JSON pass through. */
export function formatLine(json: string, colour: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  const level = String(entry.level ?? 'info');
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 19) : '';
  const tag = level.toUpperCase().padEnd(5);
  const where = [entry.list, entry.job].filter((v) => v !== undefined && v !== null).join(' ');
  const fields = Object.entries(entry)
    .filter(([k, v]) => !HIDDEN.has(k) && v !== undefined && v !== null && v !== 0 && v !== '' && !(Array.isArray(v) && v.length === 0))
    .map(([k, v]) => `${k}=${describe(v)}`);
  const shown = fields.slice(0, MAX_FIELDS).join(' ') + (fields.length > MAX_FIELDS ? ` (+${fields.length - MAX_FIELDS} more)` : '');
  const head = colour ? `${COLOURS[level] ?? ''}${tag}${RESET}` : tag;
  const err = errorOf(entry.err);
  return `${time} ${head} ${where ? `${where}: ` : ''}${String(entry.msg ?? '')}${shown ? `  ${shown}` : ''}${err ? ` — ${err}` : ''}`;
}

const people = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

function describe(value: unknown): string {
  if (typeof value === 'string') return /^[\w.:/@+-]*$/.test(value) ? value : quoted(value);
  if (typeof value === 'number') return people.format(value);
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** A text value in a human line: single-quoted when it can be, so double quotes inside are not escaped again. */
function quoted(text: string): string {
  const one = text.replace(/\s*\n\s*/g, ' ');
  return one.includes("'") ? JSON.stringify(one) : `'${one}'`;
}

/** An error's message as it reads, after the line's fields. */
function errorOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const message = typeof value === 'object' ? (value as { message?: unknown }).message : value;
  return String(message ?? 'error').replace(/\s*\n\s*/g, ' ');
}

/** A pino destination writing human lines to `out`. */
export function prettyDestination(out: { write(text: string): unknown }, colour: boolean): DestinationStream {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line.trim()) out.write(`${formatLine(line, colour)}\n`);
    },
  };
}
