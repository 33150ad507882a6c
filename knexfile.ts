/**
 * For knex's own CLI (`node --import tsx ./node_modules/knex/bin/cli.js ...`).
 * listsync itself runs migrations from code: `listsync migrate`, which also renames the
 * recorded rows of renamed migration files (src/db.ts › RENAMED_MIGRATIONS); knex's CLI does not.
 */
import type { Knex } from 'knex';
import { migrationConfig } from './src/db.js';

const config: Knex.Config = {
  client: 'pg',
  connection: process.env.DATABASE_URL,
  migrations: migrationConfig,
};

export default config;
