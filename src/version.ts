/** listsync's version, from its package.json (found from here whether run from src/ or compiled into dist/src/). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)), i = 0; i < 4; dir = dirname(dir), i++) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'listsync' && pkg.version) return pkg.version;
  }
  return 'unknown';
}
