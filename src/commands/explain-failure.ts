/**
 * How a list job's command ends when its run did not: what is printed and the
 * exit code, the platform asked what is wrong with the list when it refused a
 * request about it (what `check` asks).
 */
import type { AppContext } from '../context.js';
import type { ListConfig } from '../config.js';
import { ConfigError, LockedError, UsageError, coerceError } from '../errors.js';
import { exitCodeFor } from '../exit-code.js';
import { AuthError, PlatformError, TransportError } from '../platform/platform-errors.js';
import { listKeyPath } from '../accounts.js';
import { checkList } from './list-check.js';

/**
 * Prints why a list's run did not finish and returns the exit code:
 * - it gave way to a run of the same list elsewhere: recorded 'skipped', said so, 0;
 * - the platform refused a request about the list: the platform is asked what is wrong with the
 *   list's config (what `check` asks); a wrong appID/listID or a field that is missing or not
 *   indexed is exit 2, as in `check`;
 * - else 1 (2 for a config, usage or API key problem: a list with no mirror table yet...).
 * It never throws: the command goes on with its next list (list-outcomes.ts). `subject`: the list, or '' for the users and directory jobs.
 */
export async function reportJobFailure(ctx: AppContext, subject: ListConfig | string, job: string, err: unknown): Promise<number> {
  return (await explainJobFailure(ctx, subject, job, err)).code;
}

/** As reportJobFailure, with the line printed (the reason, for the line per list at the end). */
export async function explainJobFailure(
  ctx: AppContext,
  subject: ListConfig | string,
  job: string,
  err: unknown,
): Promise<{ code: number; reason: string }> {
  const name = typeof subject === 'string' ? subject : subject.name;
  const head = name ? `${name}: ${job}` : job;
  if (err instanceof LockedError) {
    ctx.io.err(`${head} skipped: ${err.message}`);
    return { code: 0, reason: `skipped: ${err.message}` };
  }
  const explained = typeof subject === 'string' || err instanceof UsageError ? err : await explainPlatformRefusal(ctx, subject, err);
  const reason = coerceError(explained).message;
  ctx.io.err(`${head} failed: ${reason}`);
  return { code: exitCodeFor(explained), reason };
}

async function explainPlatformRefusal(ctx: AppContext, list: ListConfig, err: unknown): Promise<unknown> {
  const refusal = platformErrorIn(err);
  if (!refusal || refusal instanceof AuthError || refusal instanceof TransportError) return err;
  const at = listKeyPath(ctx.config, list);
  try {
    const finding = await checkList(ctx.clientFor(list), list, at);
    if (!finding.ok && finding.severity === 2) return new ConfigError(finding.message, at, { cause: err });
  } catch (checkErr) {
    ctx.logger.debug({ err: checkErr }, 'asking the platform about the list failed too');
  }
  return err;
}

/** The platform's error an error is, or was caused by (a job may wrap it with what it did about it). */
function platformErrorIn(err: unknown): PlatformError | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++)
    if (e instanceof PlatformError) return e;
  return undefined;
}
