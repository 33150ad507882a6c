/**
 * The command line: parses, then calls into the modules. Exit codes: 0 success,
 * 1 a run failed, 2 bad usage or config.
 */
import { Command, CommanderError, Option } from 'commander';
import { ConfigError, UsageError, exitCodeFor, coerceError } from './errors.js';
import { type GlobalOptions, type Output, loadAppConfig, openContext, stdio } from './context.js';
import { runInit } from './commands/init.js';
import { runMigrate } from './commands/migrate.js';
import { exitCodeOf, runCheck } from './commands/check.js';
import { registerEmulatorCommand } from './emulator/command.js';

export function buildProgram(io: Output, setCode: (code: number) => void): Command {
  const program = new Command('listsync')
    .description('Keeps a PostgreSQL mirror of the platform\'s lists fresh, and writes edits back version-checked.')
    .option('-c, --config <path>', 'config file (default: $LISTSYNC_CONFIG or ./listsync.config.json)')
    .addOption(new Option('--log-level <level>', 'log level').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']))
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError('(run "listsync --help" for usage)')
    .exitOverride();

  const globals = (): GlobalOptions => program.opts<GlobalOptions>();

  program
    .command('init')
    .description('write a commented listsync.config.json and .env.example in the current directory')
    .option('--force', 'overwrite an existing config file', false)
    .action((opts: { force: boolean }) => {
      for (const file of runInit({ dir: process.cwd(), force: opts.force })) io.out(`wrote ${file}`);
      io.out('Next: copy .env.example to .env, fill it in, then run "listsync check".');
    });

  program
    .command('check')
    .description('validate the config, reach the database and the platform, check filter/sort fields are indexed')
    .action(async () => {
      const config = loadAppConfig(globals());
      const findings = await runCheck(config);
      for (const f of findings) io.out(`${f.ok ? 'ok  ' : 'FAIL'} ${f.check}: ${f.message}`);
      setCode(exitCodeOf(findings));
    });

  program
    .command('migrate')
    .description("apply listsync's own migrations (schema listsync); safe to run repeatedly")
    .action(async () => {
      const ctx = await openContext(globals(), io);
      try {
        const applied = await runMigrate(ctx.db);
        io.out(applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'already up to date');
      } finally {
        await ctx.close();
      }
    });

  registerEmulatorCommand(program);
  return program;
}

export async function main(argv: readonly string[], io: Output = stdio): Promise<number> {
  let code = 0;
  const program = buildProgram(io, (c) => {
    code = c;
  });
  try {
    await program.parseAsync([...argv]);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2;
    }
    const e = coerceError(err);
    if (e instanceof ConfigError || e instanceof UsageError) io.err(`listsync: ${e.message}`);
    else io.err(`listsync: ${e.message}`);
    return exitCodeFor(e);
  }
}
