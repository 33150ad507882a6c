/** `listsync init`: writes a commented config file and .env.example. */
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_CONFIG_FILE } from '../config.js';
import { UsageError } from '../errors.js';

export const SAMPLE_CONFIG = {
  '//': 'listsync config. Keys starting with // are comments. Secrets come from the environment (.env): ${NAME} is replaced by the variable NAME.',
  platform: {
    '//': 'baseUrl ends with /v1. timeZone is the platform\'s zone: dates in filters and values are its calendar dates.',
    baseUrl: 'http://127.0.0.1:4010/v1',
    apiKey: '${PLATFORM_API_KEY}',
    timeZone: 'UTC',
    requestsPerSecond: 10,
  },
  database: {
    '//': 'schema holds the mirror tables; listsync keeps its own state in schema "listsync".',
    url: '${DATABASE_URL}',
    schema: 'mirror',
  },
  lists: [
    {
      '//': 'cursorField and sortField must be indexed on the platform (listsync check verifies it).',
      name: 'orders',
      appID: 'demo',
      listID: 'orders',
      cursorField: 'Modified',
      sortField: 'Created',
      lookbackDays: 1,
      conflictPolicy: 'remote-wins',
      schedule: { pull: '*/10 * * * *', push: '*/2 * * * *', reconcile: '30 3 * * *' },
    },
  ],
  users: { enabled: true, schedule: '0 * * * *' },
  serve: { port: 8080 },
};

export const SAMPLE_ENV = `# listsync secrets. Copy to .env (never commit .env).
# The platform API key (system settings of the platform). For the emulator: emulator-key
PLATFORM_API_KEY=
# PostgreSQL holding the mirror, e.g. postgres://listsync:secret@127.0.0.1:5432/reporting
DATABASE_URL=
`;

export function runInit(opts: { dir: string; force: boolean }): string[] {
  const configPath = resolve(opts.dir, DEFAULT_CONFIG_FILE);
  const envPath = resolve(opts.dir, '.env.example');
  if (existsSync(configPath) && !opts.force) {
    throw new UsageError(`${configPath} already exists; use --force to overwrite it.`);
  }
  writeFileSync(configPath, `${JSON.stringify(SAMPLE_CONFIG, null, 2)}\n`);
  writeFileSync(envPath, SAMPLE_ENV);
  return [configPath, envPath];
}
