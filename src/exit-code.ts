/**
 * The exit code an error that ends a command means: 2 when what the user gave
 * is wrong (usage, config, an API key the platform refuses) or the operator
 * must take a step first (OperatorActionError), 1 when something
 * failed at run time (database or platform unreachable, a run failed). The
 * error and every cause under it (up to five deep) are looked at, so a job
 * that wraps a `ConfigError` still exits 2. Above both src/errors.ts and
 * platform/platform-errors.ts, so neither imports the other (test/import-graph.test.ts);
 * only the command line uses it. (test/exit-codes.test.ts.)
 */
import { ConfigError, OperatorActionError, UsageError } from './errors.js';
import { AuthError } from './platform/platform-errors.js';

export function exitCodeFor(err: unknown): 1 | 2 {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ConfigError || e instanceof UsageError || e instanceof OperatorActionError || e instanceof AuthError) return 2;
  }
  return 1;
}
