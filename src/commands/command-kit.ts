/**
 * What a command needs to register itself on the program: the program, the
 * output, a way to set the exit code, the global options, the jobs `serve`
 * schedules (handed in by the entry point), and `withContext` (config +
 * database + client opened for the action and closed after). Each command
 * file holds its own definition (`register(kit)`) and `cli.ts` only
 * assembles them.
 */
import type { Command } from 'commander';
import { type AppContext, type GlobalOptions, type Output, openContext } from '../context.js';
import { migrateLatest, requireMigrated } from '../db.js';
import type { JobDefinition } from '../serve/job-definition.js';
import { SIGNAL_EXIT_CODES, commandLine, watchSignals } from './signals.js';

export interface CommandKit {
  program: Command;
  io: Output;
  setCode(code: number): void;
  globals(): GlobalOptions;
  /** The jobs `serve` schedules (jobs/index.ts, handed in by bin/listsync.js). */
  jobs: readonly JobDefinition[];
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
export function commandKit(
  program: Command,
  io: Output,
  setCode: (code: number) => void,
  jobs: readonly JobDefinition[],
  args: readonly string[] = [],
): CommandKit {
  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  return {
    program,
    io,
    setCode,
    globals,
    jobs,
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
