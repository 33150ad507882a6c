/**
 * What `listsync check` reports, one line each: a check, whether it passed,
 * what is wrong and what to do, and whose problem it is (severity 2: the
 * config or the usage, exit 2; 1: something unreachable or failing, exit 1).
 * Its own module so that the checks (check.ts, list-check.ts,
 * mirror-tables.ts) share it without importing each other in a circle.
 */

export interface Finding {
  check: string;
  ok: boolean;
  message: string;
  /** 2 = config/usage problem, 1 = something unreachable or failing. */
  severity?: 1 | 2;
  /** The platform refused the API key: asking about further lists is pointless. */
  keyRefused?: boolean;
  /** Worth reading but not a failure (printed `warn`, exit code unchanged). */
  warning?: boolean;
}
