/**
 * Structured logs (pino). Secrets are redacted twice: by key (apiKey,
 * password, authorization headers) and by value (any configured secret that
 * shows up inside a message or an error).
 */
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';
import { scrubSecrets } from './secrets.js';
import { prettyDestination, type LogFormat } from './log-format.js';

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
  };
  const raw = settings.destination ?? pino.destination(2);
  const dest = settings.format === 'pretty' ? prettyDestination(raw, Boolean(process.stderr.isTTY) && !settings.destination) : raw;
  if (secrets.length === 0) return pino(options, dest);
  const scrubbing: DestinationStream = {
    write(line: string) {
      dest.write(scrubSecrets(line, secrets));
    },
  };
  return pino(options, scrubbing);
}

/** Replaces every occurrence of a secret (raw, URL-encoded or JSON-escaped) with [redacted]. */
export { scrubSecrets };

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
