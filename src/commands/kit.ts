/**
 * What a command needs to register itself on the program: the program, the
 * output, a way to set the exit code, the global options, and `withContext`
 * (config + database + client opened for the action and closed after). Also
 * the option parsers several commands share, so each command file holds its
 * own definition (`register(kit)`) and `cli.ts` only assembles them.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { type AppContext, type GlobalOptions, type Output, openContext } from '../context.js';
import { ConfigError, LockedError, UsageError, coerceError } from '../errors.js';
import { exitCodeFor } from '../exit-code.js';
import type { ListConfig } from '../config.js';
import { AuthError, PlatformError, TransportError } from '../platform/errors.js';
import { checkList } from './list-check.js';
import { migrateLatest, requireMigrated } from '../db.js';
import { SIGNAL_EXIT_CODES, commandLine, watchSignals } from './signals.js';
import type { JobDeps, PageDone } from '../sync/run-job.js';

export interface CommandKit {
  program: Command;
  io: Output;
  setCode(code: number): void;
  globals(): GlobalOptions;
  /**
   * Opens config + database + client for the action, closes them after; a returned number is the exit code.
   * listsync's tables must be current (else "run `listsync migrate`", exit 2) unless `schema` says otherwise.
   */
  withContext(fn: (ctx: AppContext) => Promise<number | void>, options?: ContextOptions): Promise<void>;
}

export interface ContextOptions {
  /** `current` (default): listsync's tables must be up to date; `migrate`: apply pending migrations first; `any`: no check (migrate itself). */
  schema?: 'current' | 'migrate' | 'any';
  /**
   * A one-shot command (default): SIGINT/SIGTERM abort `ctx.signal`; once the action returns, one line
   * says how to resume and the exit code is 130/143; on a terminal only warnings are logged unless a
   * level is chosen (the summary is printed once). `service` (serve): it handles signals itself and
   * logs at the level set.
   */
  service?: boolean;
}

/** `args`: the command line as typed (after `listsync`), repeated in the line that says how to resume. */
export function commandKit(program: Command, io: Output, setCode: (code: number) => void, args: readonly string[] = []): CommandKit {
  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  return {
    program,
    io,
    setCode,
    globals,
    async withContext(fn, options = {}) {
      const opened = await openContext(globals(), io, options.service ? 'service' : 'command');
      const signals = options.service ? undefined : watchSignals(io);
      const ctx: AppContext = signals ? { ...opened, signal: signals.signal } : opened;
      try {
        await prepareSchema(ctx, options.schema ?? 'current');
        const code = await fn(ctx);
        if (typeof code === 'number') setCode(code);
        const received = signals?.received();
        if (received) {
          io.err(`listsync: interrupted by ${received}; the work done is kept: run "${commandLine(args)}" again to carry on.`);
          setCode(SIGNAL_EXIT_CODES[received]);
        }
      } finally {
        try {
          await ctx.close();
        } finally {
          signals?.dispose();
        }
      }
    },
  };
}

async function prepareSchema(ctx: AppContext, schema: NonNullable<ContextOptions['schema']>): Promise<void> {
  if (schema === 'migrate') {
    const applied = await migrateLatest(ctx.db);
    if (applied.length) ctx.logger.info({ applied }, `applied ${applied.length} migration(s)`);
  }
  if (schema !== 'any') await requireMigrated(ctx.db);
}

// ---- how a list job's command ends when its run did not ---------------------

/**
 * Prints why a list's run did not finish and returns the exit code:
 * - it gave way to a run of the same list elsewhere: recorded 'skipped', said so, 0;
 * - the platform refused a request about the list: the platform is asked what is wrong with the
 *   list's config (what `check` asks); a wrong appID/listID or a field that is missing or not
 *   indexed is exit 2, as in `check`;
 * - else 1 (2 for a config, usage or API key problem).
 * A usage error (an unknown list...) ends the command as it is. `subject`: the list, or '' for the users and directory jobs.
 */
export async function reportJobFailure(ctx: AppContext, subject: ListConfig | string, job: string, err: unknown): Promise<number> {
  if (err instanceof UsageError) throw err;
  const name = typeof subject === 'string' ? subject : subject.name;
  const head = name ? `${name}: ${job}` : job;
  if (err instanceof LockedError) {
    ctx.io.err(`${head} skipped: ${err.message}`);
    return 0;
  }
  const explained = typeof subject === 'string' ? err : await explainPlatformRefusal(ctx, subject, err);
  ctx.io.err(`${head} failed: ${coerceError(explained).message}`);
  return exitCodeFor(explained);
}

async function explainPlatformRefusal(ctx: AppContext, list: ListConfig, err: unknown): Promise<unknown> {
  const refusal = platformErrorIn(err);
  if (!refusal || refusal instanceof AuthError || refusal instanceof TransportError) return err;
  const i = ctx.config.lists.findIndex((l) => l.name === list.name);
  try {
    const finding = await checkList(ctx.client, list, i);
    if (!finding.ok && finding.severity === 2) return new ConfigError(finding.message, `lists[${i}]`, { cause: err });
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

// ---- shared options --------------------------------------------------------

/** `--wait`: how long a job waits for a run of the same list in another process. */
const WAIT_MS = 24 * 3_600_000;

/**
 * What a list job run from the command line gets: the context's database,
 * client, config and signal, a logger naming the list and job on every line,
 * and the progress hook.
 */
export function jobDeps(
  ctx: AppContext,
  list: ListConfig,
  job: string,
  options: { wait: boolean },
  onPage: (p: PageDone) => void,
): JobDeps & { onPage: (p: PageDone) => void } {
  return {
    db: ctx.db,
    client: ctx.client,
    config: ctx.config,
    logger: ctx.logger.child({ list: list.name, job }),
    waitMs: options.wait ? WAIT_MS : 0,
    signal: ctx.signal,
    onPage,
  };
}

export const LIST_FLAGS = '-l, --list <name>';
export const LIST_HELP = 'only this list';
export const WAIT_FLAGS = '--wait';
export const WAIT_HELP = 'wait for a run of the same list in another process instead of exiting';

/** `--list` and `--wait`, as every list job takes them. */
export function listJobOptions(cmd: Command): Command {
  return cmd.option(LIST_FLAGS, LIST_HELP).option(WAIT_FLAGS, WAIT_HELP, false);
}

/** A commander parser for a whole number in [min, max]. */
export function wholeNumber(min: number, max: number, what = `a whole number ${min}-${max}`): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(what);
    return n;
  };
}

/** A positive whole number given on the command line as an id (`conflicts show 3`). */
export function positiveId(value: string, what: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${what} is a positive whole number, got "${value}".`);
  return n;
}
