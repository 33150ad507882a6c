/**
 * The few error classes listsync raises, and the one place that coerces `unknown`.
 * Every error keeps its cause; messages say what was wrong and what to do.
 * Imports nothing of listsync's: every layer may import it (the exit code an
 * error means is exit-code.ts, which knows the platform's errors too).
 */

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

/**
 * A step the operator must take before this can work, named in the message (run `listsync pull`
 * first, run `listsync migrate`, settle another change first): exit code 2.
 */
export class OperatorActionError extends Error {
  override readonly name = 'OperatorActionError';
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

/** Postgres error codes we branch on. */
export const PG = {
  uniqueViolation: '23505',
  undefinedTable: '42P01',
  invalidCatalogName: '3D000',
  /** A login refused: a wrong password (28P01), an unknown role or no pg_hba entry (28000). */
  invalidPassword: '28P01',
  invalidAuthorization: '28000',
  /** Also a connection refused for want of the CONNECT privilege on the database. */
  insufficientPrivilege: '42501',
  duplicateDatabase: '42P04',
  lockNotAvailable: '55P03',
  deadlockDetected: '40P01',
  raiseException: 'P0001',
} as const;

export function pgCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}
