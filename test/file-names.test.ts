/**
 * A file's name says one thing: no two modules of src/ and jobs/ share a
 * name (a folder's `index.ts` barrel and its `types.ts` aside), so a name in
 * a stack trace, an import or a review points at one module.
 */
import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const SHARED_BY_DESIGN = new Set(['index.ts', 'types.ts']);

function modules(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return modules(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

describe('file names', () => {
  it('no two modules of src/ and jobs/ share a name', () => {
    const byName = new Map<string, string[]>();
    for (const path of [...modules('src'), ...modules('jobs')]) {
      const name = basename(path);
      if (!SHARED_BY_DESIGN.has(name)) byName.set(name, [...(byName.get(name) ?? []), path]);
    }
    const shared = [...byName].filter(([, paths]) => paths.length > 1).map(([name, paths]) => `${name}: ${paths.join(', ')}`);
    expect(shared, 'rename one after what it holds').toEqual([]);
    expect(byName.size).toBeGreaterThan(100);
  });
});
