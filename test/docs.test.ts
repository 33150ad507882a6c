/**
 * The front page and docs/ stay true to the code: every config key the schema
 * accepts has exactly one row with a meaning in docs/configuration.md, the generated block of
 * docs/commands.md is every command's live --help, and every link between the
 * pages reaches a file and a heading. Notes in docs/_incoming/ (folded in at
 * merge) are not read.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMMANDS_DOC, generatedBlock, renderCommandsBlock } from '../scripts/docs-commands.js';
import { CONFIG_DOC, expectedRows, readRows, renderRows } from '../scripts/docs-config.js';
import { configKeyPaths } from '../src/config.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const docPages = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));

/** GitHub's anchor for a heading. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function headings(markdown: string): Set<string> {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '');
  return new Set([...withoutCode.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));
}

describe('docs/configuration.md', () => {
  const rows = readRows(readFileSync(CONFIG_DOC, 'utf8'));

  it('has exactly one row for every config key the schema accepts, and none for a key it does not', () => {
    const schema = configKeyPaths();
    expect(schema).toEqual(expect.arrayContaining(['platform.baseUrl', 'lists[].cursorField', 'serve.publicUrl', 'log.level']));
    const documented = rows.map((r) => r.key);
    const count = (key: string) => documented.filter((k) => k === key).length;
    const problems = {
      missing: schema.filter((k) => count(k) === 0),
      documentedMoreThanOnce: schema.filter((k) => count(k) > 1),
      notInTheSchema: [...new Set(documented.filter((k) => !schema.includes(k)))],
      withoutMeaning: rows.filter((r) => !r.meaning).map((r) => r.key),
    };
    expect(problems, 'docs/configuration.md keys table against src/config-schema.ts (npm run docs:config adds and removes rows)').toEqual({
      missing: [],
      documentedMoreThanOnce: [],
      notInTheSchema: [],
      withoutMeaning: [],
    });
  });

  it("lists the keys in the schema's order, as npm run docs:config writes them", () => {
    expect(rows.map((r) => r.key)).toEqual(expectedRows(rows).map((r) => r.key));
  });

  it('npm run docs:config gives a new key a row with its default, and drops a key the schema lost', () => {
    const edited = [
      ...rows.filter((r) => r.key !== 'serve.port' && r.key !== 'lists[].pageSize'),
      { key: 'gone.key', default: '1', meaning: 'x' },
    ];
    const next = expectedRows(edited);
    expect(next.find((r) => r.key === 'serve.port')).toEqual({ key: 'serve.port', default: '`8080`', meaning: '' });
    expect(next.find((r) => r.key === 'lists[].pageSize')).toEqual({ key: 'lists[].pageSize', default: '`1000`', meaning: '' });
    expect(next.find((r) => r.key === 'gone.key')).toBeUndefined();
    expect(next.find((r) => r.key === 'platform.baseUrl')).toEqual(rows.find((r) => r.key === 'platform.baseUrl'));
    expect(renderRows(next).split('\n')).toHaveLength(next.length + 2);
  });
});

describe('docs/commands.md', () => {
  it("holds every command's live --help (after changing a command, run npm run docs:commands)", () => {
    const block = generatedBlock(readFileSync(COMMANDS_DOC, 'utf8'));
    expect(block, 'the generated block markers').toBeDefined();
    const live = renderCommandsBlock();
    for (const name of ['listsync', 'listsync pull', 'listsync serve', 'listsync conflicts resolve', 'listsync emulator'])
      expect(live).toContain(`### \`${name}\`\n`);
    expect(block, 'docs/commands.md is behind the commands: run npm run docs:commands').toBe(live);
  });
});

describe('the front page', () => {
  const readme = read('README.md');

  it('is a front page: at most 200 lines, the two set-up commands, a quickstart in order', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
    expect(readme).toContain('npm install && npm run demo');
    expect(readme).toMatch(/^npm test\b/m);
    const quickstart = readme.slice(readme.indexOf('## Quickstart'));
    const steps = ['listsync init', '.env', 'listsync migrate', 'listsync check', 'listsync pull', 'listsync serve'].map((s) =>
      quickstart.indexOf(s),
    );
    expect(steps.every((at) => at >= 0)).toBe(true);
    expect([...steps].sort((a, b) => a - b)).toEqual(steps);
  });

  it("is what CI runs: .ci/run ends with the front page's test command", () => {
    const ci = read('.ci/run').trim().split('\n');
    expect(ci.at(-1)).toBe('npm test');
  });

  it('links every page of docs/, and docs/README.md is their table of contents', () => {
    const toc = read('docs/README.md');
    const pages = docPages.filter((f) => f !== 'README.md');
    expect(pages.length).toBeGreaterThanOrEqual(8);
    expect(pages.filter((p) => !toc.includes(`](${p}`))).toEqual([]);
    expect(readme).toContain('](docs/README.md)');
  });
});

describe('links', () => {
  const files = ['README.md', ...docPages.map((f) => `docs/${f}`)];

  it('between the pages reach an existing file and heading', () => {
    const broken: string[] = [];
    for (const file of files) {
      const text = read(file).replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const resolved = path ? join(dirname(join(ROOT, file)), path) : join(ROOT, file);
        if (!existsSync(resolved)) broken.push(`${file}: ${target} (no ${relative(ROOT, resolved)})`);
        else if (anchor && resolved.endsWith('.md') && !headings(readFileSync(resolved, 'utf8')).has(anchor))
          broken.push(`${file}: ${target} (no heading #${anchor})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the anchor check knows GitHub anchors', () => {
    expect(slug("Every command's `--help`")).toBe('every-commands---help');
    expect(slug('Preview: `push --dry-run`')).toBe('preview-push---dry-run');
    expect(headings('# A b\n```\n# not a heading\n```\n## C-d')).toEqual(new Set(['a-b', 'c-d']));
  });
});
