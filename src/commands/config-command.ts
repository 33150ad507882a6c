/**
 * `listsync config show`: every effective setting, its value (secrets masked) and where it came from
 * (the config file, a variable from the environment or a `.env` file, or the default). Needs no
 * database: it reads what every command reads, as they read it. (test/config-show.test.ts)
 */
import { configLayers, loadConfig } from '../config.js';
import { settingSources } from '../config-sources.js';
import { table } from '../format.js';
import type { CommandKit } from './command-kit.js';

export function register({ program, io, globals }: CommandKit): void {
  const config = program.command('config').description('the effective configuration');
  config
    .command('show')
    .description('every effective setting with where it came from (file, .env, environment, default); secrets masked')
    .action(() => {
      const effective = loadConfig({ path: globals().config });
      const layers = configLayers({ path: globals().config });
      const rows = settingSources(effective, layers.file, layers.env);
      io.out(
        `config file: ${layers.path}\n${table(
          ['key', 'value', 'source'],
          rows.map((r) => [r.key, r.value, r.source]),
        )}`,
      );
    });
}
