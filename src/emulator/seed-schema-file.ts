import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { seedJsonSchema } from './seed.js';

/**
 * The shipped JSON Schema of seed files (`src/emulator/seed.schema.json`),
 * generated from the zod schema that validates them. `npm run
 * emulator:schema` rewrites it; a test fails when the two differ.
 */

export const SEED_SCHEMA_PATH = fileURLToPath(new URL('./seed.schema.json', import.meta.url));

export function seedSchemaText(): string {
  return `${JSON.stringify(seedJsonSchema(), null, 2)}\n`;
}

export async function readShippedSeedSchema(): Promise<string> {
  return readFile(SEED_SCHEMA_PATH, 'utf8');
}

export async function writeSeedSchema(): Promise<void> {
  await writeFile(SEED_SCHEMA_PATH, seedSchemaText());
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeSeedSchema();
  process.stdout.write(`wrote ${SEED_SCHEMA_PATH}\n`);
}
