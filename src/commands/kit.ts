/**
 * What a command needs to register itself on the program: the program, the
 * output, a way to set the exit code, the global options, and `withContext`
 * (config + database + client opened for the action and closed after). Also
 * the option parsers several commands share, so each command file holds its
 * own definition (`register(kit)`) and `cli.ts` only assembles them.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { type AppContext, type GlobalOptions, type Output, openContext } from '../context.js';
import { UsageError } from '../errors.js';

export interface CommandKit {
  program: Command;
  io: Output;
  setCode(code: number): void;
  globals(): GlobalOptions;
  /** Opens config + database + client for the action, closes them after; a returned number is the exit code. */
  withContext(fn: (ctx: AppContext) => Promise<number | void>): Promise<void>;
}

export function commandKit(program: Command, io: Output, setCode: (code: number) => void): CommandKit {
  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  return {
    program,
    io,
    setCode,
    globals,
    async withContext(fn) {
      const ctx = await openContext(globals(), io);
      try {
        const code = await fn(ctx);
        if (typeof code === 'number') setCode(code);
      } finally {
        await ctx.close();
      }
    },
  };
}

// ---- shared options --------------------------------------------------------

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
