import type { Knex } from '../db.js';
import { migrateLatest } from '../db.js';

/** Applies pending migrations; a second run in a row does nothing. */
export async function runMigrate(db: Knex): Promise<string[]> {
  return migrateLatest(db);
}
