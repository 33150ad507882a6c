/**
 * The few error classes listsync raises, and the one place that coerces `unknown`.
 * Every error keeps its cause; messages say what was wrong and what to do.
 */
import { AuthError } from './platform/errors.js';

/** Bad configuration: exit code 2. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    readonly key?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Bad command-line usage (unknown list, bad date...): exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Another process holds the lease for this list and job. */
export class LockedError extends Error {
  override readonly name = 'LockedError';
  constructor(
    message: string,
    readonly lockName: string,
    readonly holder?: string,
  ) {
    super(message);
  }
}

export function coerceError(err: unknown): Error {
  if (err instanceof Error) return err;
  if (typeof err === 'string') return new Error(err);
  try {
    return new Error(JSON.stringify(err));
  } catch {
    return new Error(String(err));
  }
}

/**
 * Exit code for an error that ends a command: 2 when what the user gave is
 * wrong (usage, config, an API key the platform refuses), 1 when something
 * failed at run time (database or platform unreachable, a run failed).
 */
export function exitCodeFor(err: unknown): 1 | 2 {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ConfigError || e instanceof UsageError || e instanceof AuthError) return 2;
  }
  return 1;
}

/** Postgres error codes we branch on. */
export const PG = {
  uniqueViolation: '23505',
  undefinedTable: '42P01',
  invalidCatalogName: '3D000',
  duplicateDatabase: '42P04',
  lockNotAvailable: '55P03',
  deadlockDetected: '40P01',
  raiseException: 'P0001',
} as const;

export function pgCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
