/**
 * The front page and docs/ stay true to the code: every config key the schema
 * accepts has exactly one row in docs/configuration.md, the generated block of
 * docs/commands.md is every command's live --help, and every link between the
 * pages reaches a file and a heading. Notes in docs/_incoming/ (folded in at
 * merge) are not read.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { COMMANDS_DOC, generatedBlock, renderCommandsBlock } from '../scripts/docs-commands.js';
import { configKeyPaths } from '../src/config.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const docPages = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));

/** The keys named in the first cell of each row of the "Keys" table, one entry per mention. */
function documentedKeys(markdown: string): string[] {
  const start = /^## Keys$/m.exec(markdown)?.index ?? markdown.length;
  const section = markdown.slice(start + 1);
  const end = /^## /m.exec(section)?.index ?? section.length;
  return section
    .slice(0, end)
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...line.split('|')[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
}

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
  it('has exactly one row for every config key the schema accepts, and none for a key it does not', () => {
    const schema = configKeyPaths();
    expect(schema).toEqual(expect.arrayContaining(['platform.baseUrl', 'lists[].cursorField', 'serve.publicUrl', 'log.level']));
    const documented = documentedKeys(read('docs/configuration.md'));
    const count = (key: string) => documented.filter((k) => k === key).length;
    const problems = {
      missing: schema.filter((k) => count(k) === 0),
      documentedMoreThanOnce: schema.filter((k) => count(k) > 1),
      notInTheSchema: [...new Set(documented.filter((k) => !schema.includes(k)))],
    };
    expect(problems, 'docs/configuration.md "Keys" table against src/config.ts').toEqual({
      missing: [],
      documentedMoreThanOnce: [],
      notInTheSchema: [],
    });
  });

  it('the check reads the table as it is written', () => {
    expect(
      documentedKeys('## Keys\n\n| key | default |\n|---|---|\n| `a.b` | `1` |\n| `a.c`, `a.d` | x |\n\n## Next\n| `z.z` | |'),
    ).toEqual(['a.b', 'a.c', 'a.d']);
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
