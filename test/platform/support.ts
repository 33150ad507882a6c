/** Shared bits of the platform tests: a config for an emulator, a debug logger into memory. */
import type { DestinationStream } from 'pino';
import type { PlatformClientConfig } from '../../src/platform/client.js';
import { type Logger, createLogger } from '../../src/logger.js';

export function configFor(emu: { baseUrl: string; apiKey: string }, overrides: Partial<PlatformClientConfig> = {}): PlatformClientConfig {
  return {
    baseUrl: emu.baseUrl,
    apiKey: emu.apiKey,
    timeZone: 'UTC',
    requestsPerSecond: 10,
    maxInFlight: 8,
    timeoutMs: 10_000,
    retries: 6,
    maxRetryAfterSeconds: 10,
    ...overrides,
  };
}

/** A debug-level logger writing into memory. No secrets are passed, so nothing is scrubbed for us. */
export function memoryLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination: DestinationStream = { write: (line: string) => void lines.push(line) };
  return { logger: createLogger({ level: 'debug', destination }), lines };
}

/** A distinctive API key, easy to search for in logs and errors. */
export function distinctiveKey(tag: string): string {
  return `lsk-${tag}-${Math.random().toString(36).slice(2, 12)}-SECRET`;
}

/** Every string an error shows: message, stack, own enumerable fields, causes. */
export function everythingShown(err: unknown): string {
  const parts: string[] = [];
  let cur: unknown = err;
  for (let depth = 0; cur && depth < 6; depth++) {
    const e = cur as Error & Record<string, unknown>;
    parts.push(String(e.message), String(e.stack));
    try {
      parts.push(JSON.stringify(e));
    } catch {
      parts.push('[circular]');
    }
    cur = e.cause;
  }
  return parts.join('\n');
}
