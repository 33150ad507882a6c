import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config.js';

/** Every key of a parsed config, as `a.b` / `lists[].c` paths. */
function keys(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) return keys(value[0], `${prefix}[]`);
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => {
      const path = prefix ? `${prefix}.${k}` : k;
      return v && typeof v === 'object' && !Array.isArray(v) && k !== 'schedule'
        ? keys(v, path)
        : Array.isArray(v)
          ? keys(v, path)
          : [path];
    });
  }
  return [prefix];
}

/** The README and every page under docs/ (the reference is moving there; docs/_incoming holds pages still to fold in). */
function documentation(): string {
  const docs = new URL('../docs/', import.meta.url);
  const pages = existsSync(docs)
    ? (readdirSync(docs, { recursive: true }) as string[])
        .filter((f) => f.endsWith('.md'))
        .map((f) => readFileSync(new URL(f, docs), 'utf8'))
    : [];
  return [readFileSync(new URL('../README.md', import.meta.url), 'utf8'), ...pages].join('\n');
}

describe('README', () => {
  it('documents every configuration key config.ts accepts', () => {
    // Every optional key set, so the parsed object carries all of them.
    const full = parseConfig({
      platform: { baseUrl: 'https://x.example/v1', apiKey: 'k-1234', account: 'acct' },
      database: { url: 'postgres://h/db' },
      lists: [{ name: 'orders', appID: 'a', listID: 'l', table: 'orders', schedule: { pull: '* * * * *' } }],
      users: { schedule: '0 * * * *' },
      directory: { schedule: '0 3 * * *' },
      serve: { publicUrl: 'https://sync.example' },
    });
    const readme = documentation();
    const all = keys(full);
    expect(all).toEqual(
      expect.arrayContaining(['platform.baseUrl', 'lists[].cursorField', 'lists[].schedule', 'serve.publicUrl', 'log.level']),
    );
    const missing = all.filter((k) => !readme.includes(`\`${k}\``));
    expect(missing).toEqual([]);
  });

  it('shows the two set-up commands', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('npm install && npm run demo');
    expect(readme).toContain('npm test');
  });
});
