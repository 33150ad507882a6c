/**
 * Ctrl-C and SIGTERM for a command: the first signal aborts the command's signal, so the job
 * finishes (or rolls back) the page or change in flight, records its run as interrupted and
 * returns; the command then says how to resume and exits 130 (SIGINT) or 143 (SIGTERM). A second
 * signal stops the process at once (the next run closes the one left running as abandoned).
 */
import type { Output } from '../context.js';

export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;
type StopSignal = keyof typeof SIGNAL_EXIT_CODES;

export interface CommandSignals {
  /** Aborted (reason: the signal's name) by the first SIGINT/SIGTERM. */
  readonly signal: AbortSignal;
  /** The signal received, if any. */
  received(): StopSignal | undefined;
  /** Stops listening: the process's default handling is back. */
  dispose(): void;
}

export function watchSignals(io: Output): CommandSignals {
  const controller = new AbortController();
  let received: StopSignal | undefined;
  const on = (sig: StopSignal) => () => {
    if (received) {
      io.err(`listsync: ${sig} again: stopping at once (the next run closes this one as abandoned and carries on)`);
      process.exit(SIGNAL_EXIT_CODES[sig]);
    }
    received = sig;
    io.err(`listsync: ${sig} received: finishing the work in flight (${sig === 'SIGINT' ? 'Ctrl-C' : 'SIGTERM'} again stops at once)`);
    controller.abort(sig);
  };
  const handlers = { SIGINT: on('SIGINT'), SIGTERM: on('SIGTERM') };
  process.on('SIGINT', handlers.SIGINT);
  process.on('SIGTERM', handlers.SIGTERM);
  return {
    signal: controller.signal,
    received: () => received,
    dispose() {
      process.off('SIGINT', handlers.SIGINT);
      process.off('SIGTERM', handlers.SIGTERM);
    },
  };
}

/** `listsync pull --list orders`, quoted where a shell needs it: what to type to carry on. */
export function commandLine(args: readonly string[]): string {
  const quoted = args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`));
  return ['listsync', ...quoted].join(' ');
}
