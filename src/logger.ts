/**
 * Structured logs (pino). Secrets are redacted twice: by key (apiKey,
 * password, authorization headers) and by value (any configured secret that
 * shows up inside a message or an error). An error logged as `err` shows its
 * type, message and code; its stack and causes only at debug level (a failing
 * run every minute writes one short line, not a trace).
 */
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { scrubSecrets } from './secrets.js';
import { prettyDestination, type LogFormat } from './log-format.js';
import { beginLine } from './terminal-line.js';

export type { Logger };

export interface LoggerSettings {
  level?: string;
  /** Secret values to scrub from every line (apiKey, database password). */
  secrets?: readonly string[];
  destination?: DestinationStream;
  name?: string;
  /** `pretty`: one short human line per entry (for terminals). Default `json`. */
  format?: LogFormat;
}

const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  '*.*.apiKey',
  'headers.apiKey',
  'headers.apikey',
  '*.headers.apikey',
  '*.headers.apiKey',
  'password',
  '*.password',
  'authorization',
  '*.authorization',
];

export function createLogger(settings: LoggerSettings = {}): Logger {
  const secrets = (settings.secrets ?? []).filter((s) => s.length >= 4);
  const options: LoggerOptions = {
    name: settings.name ?? 'listsync',
    level: settings.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    serializers: { err: errorSerializer(settings.level ?? 'info') },
  };
  const raw = settings.destination ?? pino.destination(2);
  const dest = settings.format === 'pretty' ? prettyDestination(raw, Boolean(process.stderr.isTTY) && !settings.destination) : raw;
  // Every line starts on a line of its own, never on a progress bar's (terminal-line.ts).
  const lines: DestinationStream = {
    write(line: string) {
      beginLine();
      dest.write(secrets.length === 0 ? line : scrubSecrets(line, secrets));
    },
  };
  return pino(options, lines);
}

/** The full error (stack, causes) at debug and trace; type, message and code otherwise. */
function errorSerializer(level: string): (err: unknown) => unknown {
  if (level === 'debug' || level === 'trace') return pino.stdSerializers.err as (err: unknown) => unknown;
  return (err) => {
    if (!(err instanceof Error)) return err;
    const code = (err as { code?: unknown }).code;
    return { type: err.constructor.name, message: err.message, ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}) };
  };
}

/** Replaces every occurrence of a secret (raw, URL-encoded or JSON-escaped) with [redacted]. */
export { scrubSecrets };

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
