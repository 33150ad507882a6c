/** The options and option parsers several commands share. */
import { InvalidArgumentError, type Command } from 'commander';
import { UsageError } from '../errors.js';

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
