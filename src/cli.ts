/**
 * The command line: assembles the commands (each command's file registers its
 * own definition) and maps errors to exit codes: 0 success, 1 a run failed,
 * 2 bad usage, config, or a key the platform refused.
 */
import { Command, CommanderError, Option } from 'commander';
import { coerceError } from './errors.js';
import { exitCodeFor } from './exit-code.js';
import { type Output, stdio } from './context.js';
import { registerEmulatorCommand } from './emulator/command.js';
import { LOG_FORMATS } from './log-format.js';
import { scrubSecrets } from './secrets.js';
import { packageVersion } from './version.js';
import { commandKit } from './commands/command-kit.js';
import type { JobDefinition } from './serve/job-definition.js';
import * as check from './commands/check.js';
import * as configCommand from './commands/config-command.js';
import * as demo from './commands/demo.js';
import * as directory from './commands/directory-command.js';
import * as discover from './commands/discover.js';
import * as exporter from './commands/export.js';
import * as hooks from './commands/hooks.js';
import * as init from './commands/init.js';
import * as migrate from './commands/migrate.js';
import * as pull from './commands/pull-command.js';
import * as push from './commands/push-command.js';
import * as reconcile from './commands/reconcile-command.js';
import * as runs from './commands/runs-command.js';
import * as serve from './commands/serve-command.js';
import * as state from './commands/state-command.js';
import * as status from './commands/status-command.js';
import * as jobsCommand from './commands/jobs-command.js';
import * as users from './commands/users-command.js';

/** The program with every command; `jobs`: what `serve` schedules (handed in by the entry point). */
export function buildProgram(
  io: Output,
  setCode: (code: number) => void,
  jobs: readonly JobDefinition[],
  args: readonly string[] = [],
): Command {
  const program = new Command('listsync')
    .description("Keeps a PostgreSQL mirror of the platform's lists fresh, and writes edits back version-checked.")
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .option('-c, --config <path>', 'config file (default: $LISTSYNC_CONFIG or ./listsync.config.json)')
    .addOption(new Option('--log-level <level>', 'log level').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']))
    .addOption(
      new Option('--log-format <format>', 'log lines as JSON or one short line each (default: pretty on a terminal, else json)').choices([
        ...LOG_FORMATS,
      ]),
    )
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError('(run "listsync --help" for usage)')
    .exitOverride();

  const kit = commandKit(program, io, setCode, jobs, args);
  for (const command of [
    init,
    check,
    configCommand,
    migrate,
    discover,
    pull,
    push,
    users,
    directory,
    reconcile,
    hooks,
    exporter,
    status,
    runs,
    state,
    jobsCommand,
    serve,
  ])
    command.register(kit);
  // The demo runs the real commands through the same entry point a user types.
  demo.register(kit, (args, out) => main(['node', 'listsync', ...args], jobs, out));
  registerEmulatorCommand(program);
  pointUsageErrorsAtOwnHelp(program);
  return program;
}

/** A subcommand's usage error points at that subcommand's help (`listsync runs show --help`), not the program's. */
function pointUsageErrorsAtOwnHelp(command: Command, path: readonly string[] = []): void {
  for (const sub of command.commands) {
    const own = [...path, sub.name()];
    sub.showHelpAfterError(`(run "listsync ${own.join(' ')} --help" for usage)`);
    pointUsageErrorsAtOwnHelp(sub, own);
  }
}

export async function main(argv: readonly string[], jobs: readonly JobDefinition[], io: Output = stdio): Promise<number> {
  let code = 0;
  const program = buildProgram(
    io,
    (c) => {
      code = c;
    },
    jobs,
    argv.slice(2),
  );
  try {
    await program.parseAsync([...argv]);
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2;
    }
    const e = coerceError(err);
    io.err(`listsync: ${scrubSecrets(e.message)}`);
    return exitCodeFor(e);
  }
}
