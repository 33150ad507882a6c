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
const HIDDEN = new Set(['time', 'level', 'name', 'msg', 'list', 'job', 'runId', 'pid', 'hostname']);
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
    .map(([k, v]) => `${k}=${describe(k, v)}`);
  const shown = fields.slice(0, MAX_FIELDS).join(' ') + (fields.length > MAX_FIELDS ? ` (+${fields.length - MAX_FIELDS} more)` : '');
  const head = colour ? `${COLOURS[level] ?? ''}${tag}${RESET}` : tag;
  return `${time} ${head} ${where ? `${where}: ` : ''}${String(entry.msg ?? '')}${shown ? `  ${shown}` : ''}`;
}

function describe(key: string, value: unknown): string {
  if (key === 'err' && value && typeof value === 'object')
    return JSON.stringify(String((value as { message?: unknown }).message ?? 'error'));
  if (typeof value === 'string') return /^[\w.:/@+-]*$/.test(value) ? value : JSON.stringify(value);
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** A pino destination writing human lines to `out`. */
export function prettyDestination(out: { write(text: string): unknown }, colour: boolean): DestinationStream {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line.trim()) out.write(`${formatLine(line, colour)}\n`);
    },
  };
}
