/**
 * The modules of src/ and jobs/ import each other without a circle, so each
 * can be read (and loaded) after the ones it uses, as test/store-ownership.test.ts
 * keeps each own table's SQL in one place. Every relative import counts:
 * `import`, `import type`, `export … from`, a bare `import '…'` and a literal
 * `import('…')`; a type-only circle is still two modules that cannot be read
 * one after the other. A circle found fails with its path (a.ts -> b.ts -> a.ts).
 *
 * jobs/ sits above src/ (the project's layout: one file per job, built on
 * src/): nothing in src/ imports it. src/ knows the jobs' shape
 * (src/serve/job-definition.ts); the entry point, bin/listsync.js, hands the
 * jobs of jobs/index.ts to the program, and serve schedules what it is given.
 *
 * A module whose header (its opening comment) calls it Pure (`Pure: no I/O`)
 * imports nothing that reaches the database (knex, pg, src/db.ts,
 * src/store/), the platform client or HTTP, however many modules lie in
 * between. Only what runs counts here: an `import type` is erased.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

const rel = (file: string): string => relative(ROOT, file).split(sep).join('/');

/** The code of a file without its comments (a doc comment may show an import). */
function code(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .filter((line) => !line.trim().startsWith('//'))
    .join('\n');
}

/** The relative module specifiers a source imports, in every form. */
function importSpecifiers(source: string): string[] {
  const body = code(source);
  const forms = [
    /(?:^|[\n;])\s*(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g,
    /(?:^|[\n;])\s*import\s*['"]([^'"]+)['"]/g,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  const found = forms.flatMap((re) => [...body.matchAll(re)].map((m) => m[1]!));
  return [...new Set(found.filter((s) => s.startsWith('.')))];
}

/** The specifiers a source imports at run time: every form but `import type`, `export type` and a list of types only. */
function runtimeSpecifiers(source: string): string[] {
  const body = code(source);
  const typesOnly = (clause: string): boolean => {
    const named = /^\{([^}]*)\}$/.exec(clause.trim());
    return named !== null && named[1]!.split(',').every((n) => n.trim() === '' || /^type\s/.test(n.trim()));
  };
  const fromForms = [...body.matchAll(/(?:^|[\n;])\s*(?:import|export)\s+(type\s+)?([^'";]*?)\bfrom\s*['"]([^'"]+)['"]/g)]
    .filter((m) => m[1] === undefined && !typesOnly(m[2]!))
    .map((m) => m[3]!);
  const others = [/(?:^|[\n;])\s*import\s*['"]([^'"]+)['"]/g, /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g].flatMap((re) =>
    [...body.matchAll(re)].map((m) => m[1]!),
  );
  return [...new Set([...fromForms, ...others])];
}

/** The file a relative specifier of `from` names (`./x.js` is `./x.ts`; a folder is its index.ts). */
function resolveImport(from: string, spec: string): string {
  const base = resolve(dirname(from), spec);
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((c) => existsSync(c)) ?? base;
}

/** Each module's imports, by path from the repository root. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...walk(join(ROOT, 'src')), ...walk(join(ROOT, 'jobs'))])
    graph.set(
      rel(file),
      importSpecifiers(readFileSync(file, 'utf8')).map((s) => rel(resolveImport(file, s))),
    );
  return graph;
}

/** Each module's run-time imports: files by path from the repository root, packages by name. */
function runtimeGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of [...walk(join(ROOT, 'src')), ...walk(join(ROOT, 'jobs'))])
    graph.set(
      rel(file),
      runtimeSpecifiers(readFileSync(file, 'utf8')).map((s) => (s.startsWith('.') ? rel(resolveImport(file, s)) : s)),
    );
  return graph;
}

/** A module's header, its opening comment, calls it pure ("Pure: no I/O", "Pure."). */
const saysPure = (source: string): boolean => /\bPure\b/.test(/^\s*\/\*[\s\S]*?\*\//.exec(source)?.[0] ?? '');

/**
 * What a pure module must not reach, by package name or file. A module of src/store/ takes the database it
 * works on (its own tables' I/O) unless it is pure itself (SQL text only, checked as every pure module is).
 */
function reachesOut(target: string, pure: ReadonlySet<string> = new Set()): string | undefined {
  const store = target.startsWith('src/store/') && !pure.has(target);
  if (['knex', 'pg', 'pg-copy-streams', 'pg-boss'].includes(target) || target === 'src/db.ts' || store) return 'the database';
  if (target === 'src/platform/client.ts') return 'the platform client';
  if (['got', 'node:http', 'node:https', 'node:net', 'http', 'https', 'net'].includes(target)) return 'HTTP';
  return undefined;
}

/** The first import path from `start` to something it must not reach (a -> b -> knex), if any. */
function pathOut(graph: ReadonlyMap<string, readonly string[]>, start: string, pure?: ReadonlySet<string>): string[] | undefined {
  const seen = new Set<string>();
  const visit = (node: string, path: string[]): string[] | undefined => {
    if (reachesOut(node, pure)) return [...path, node];
    if (seen.has(node)) return undefined;
    seen.add(node);
    for (const next of graph.get(node) ?? []) {
      const found = visit(next, [...path, node]);
      if (found) return found;
    }
    return undefined;
  };
  return visit(start, []);
}

/** One circle per group of modules that reach each other, each as a path that ends where it starts. */
function findCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const circles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const inCircle = new Set<string>();
  const visit = (node: string): void => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      const s = state.get(next);
      if (s === 'open') {
        const circle = [...path.slice(path.indexOf(next)), next];
        if (!circle.some((n) => inCircle.has(n))) circles.push(circle);
        for (const n of circle) inCircle.add(n);
      } else if (s === undefined) visit(next);
    }
    path.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return circles;
}

describe('the import graph of src/ and jobs/', () => {
  const graph = importGraph();

  it('reads every form of import, and ignores comments and packages', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from '../b.js';",
      "import {\n  c,\n  type D,\n} from './c.js';",
      "export { e } from './e.js';",
      "export * from './f/index.js';",
      "import './side-effect.js';",
      "const g = await import('./g.js');",
      "import { z } from 'zod';",
      "/** import { x } from './in-a-doc-comment.js' */",
      "// import { y } from './in-a-line-comment.js';",
    ].join('\n');
    expect(importSpecifiers(source).sort()).toEqual([
      '../b.js',
      './a.js',
      './c.js',
      './e.js',
      './f/index.js',
      './g.js',
      './side-effect.js',
    ]);
  });

  it('finds a circle and says its path', () => {
    const g = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'd.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', []],
      ['e.ts', ['f.ts']],
      ['f.ts', ['e.ts']],
    ]);
    expect(findCircles(g)).toEqual([
      ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
      ['e.ts', 'f.ts', 'e.ts'],
    ]);
    expect(
      findCircles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
    ).toEqual([]);
  });

  it('sees the modules and their imports', () => {
    expect(graph.get('src/cli.ts')).toContain('src/errors.ts');
    expect(graph.get('jobs/reconcile-job.ts')).toContain('src/sync/reconcile.ts');
    for (const [file, imports] of graph)
      for (const target of imports) expect(existsSync(join(ROOT, target)), `${file} imports ${target}`).toBe(true);
  });

  it('has no import circle', () => {
    const circles = findCircles(graph).map((c) => c.join(' -> '));
    expect(circles, 'break the circle: move what both need into a module of its own').toEqual([]);
  });

  it('src/errors.ts imports nothing of listsync, so every layer may import it', () => {
    expect(graph.get('src/errors.ts')).toEqual([]);
  });

  it('nothing in src/ imports jobs/', () => {
    const importers = [...graph]
      .filter(([file, imports]) => file.startsWith('src/') && imports.some((t) => t.startsWith('jobs/')))
      .map(([file]) => file)
      .sort();
    expect(importers).toEqual([]);
    expect(graph.get('jobs/pull-job.ts')).toContain('src/serve/job-definition.ts');
  });

  it('nothing in src/store/ imports src/mirror/: the store is the layer the mirror writes through, never above it', () => {
    const importers = [...graph]
      .filter(([file, imports]) => file.startsWith('src/store/') && imports.some((t) => t.startsWith('src/mirror/')))
      .map(([file]) => file)
      .sort();
    expect(importers).toEqual([]);
    // The shared leaves both layers use sit below them.
    expect(graph.get('src/store/runs.ts')).toContain('src/storable.ts');
  });
});

describe('modules called pure', () => {
  const graph = runtimeGraph();
  const pure = [...walk(join(ROOT, 'src'))]
    .filter((f) => saysPure(readFileSync(f, 'utf8')))
    .map(rel)
    .sort();

  it('reads the imports that run, and leaves out those of types only', () => {
    const source = [
      "import { a } from './a.js';",
      "import type { B } from './b.js';",
      "import { type C, type D } from './c.js';",
      "import { type E, e } from './e.js';",
      "import F, { type G } from './f.js';",
      "export type { H } from './h.js';",
      "export * from './i.js';",
      "import './side-effect.js';",
      "const j = await import('./j.js');",
      "import knex from 'knex';",
    ].join('\n');
    expect(runtimeSpecifiers(source).sort()).toEqual(['./a.js', './e.js', './f.js', './i.js', './j.js', './side-effect.js', 'knex']);
  });

  it('knows a pure module by its header, and follows its imports to what it must not reach', () => {
    expect(saysPure('/**\n * The rule. Pure: no I/O.\n */\nimport x from "y";')).toBe(true);
    expect(saysPure('/** Pure: no I/O. */\n')).toBe(true);
    expect(saysPure('/** Reads the table. */\n// Pure\nconst pure = 1;')).toBe(false);
    const g = new Map([
      ['src/a.ts', ['src/b.ts', 'zod']],
      ['src/b.ts', ['src/c.ts']],
      ['src/c.ts', ['src/store/outbox.ts']],
      ['src/d.ts', ['src/e.ts']],
      ['src/e.ts', ['src/d.ts', 'src/store/outbox-sql.ts']],
    ]);
    const pureSql = new Set(['src/store/outbox-sql.ts']);
    expect(pathOut(g, 'src/a.ts', pureSql)).toEqual(['src/a.ts', 'src/b.ts', 'src/c.ts', 'src/store/outbox.ts']);
    expect(pathOut(g, 'src/d.ts', pureSql)).toBeUndefined();
    expect(pathOut(g, 'src/d.ts')).toEqual(['src/d.ts', 'src/e.ts', 'src/store/outbox-sql.ts']);
    expect(reachesOut('pg')).toBe('the database');
    expect(reachesOut('src/platform/client.ts')).toBe('the platform client');
    expect(reachesOut('got')).toBe('HTTP');
  });

  it('finds the modules that call themselves pure', () => {
    expect(pure).toEqual(
      expect.arrayContaining([
        'src/sync/push/write-verdict.ts',
        'src/sync/push/our-write.ts',
        'src/platform/item-identity.ts',
        'src/conflicts/sides.ts',
      ]),
    );
  });

  it('none of them imports anything that reaches the database, the platform client or HTTP', () => {
    const pureSet = new Set(pure);
    const out = pure.flatMap((file) => {
      const path = pathOut(graph, file, pureSet);
      return path ? [`${path.join(' -> ')} (${reachesOut(path.at(-1)!, pureSet)})`] : [];
    });
    expect(out, 'move the rule a pure module needs into a pure module of its own, or import only its type').toEqual([]);
  });
});
