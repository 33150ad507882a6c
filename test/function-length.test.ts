/**
 * No function in src/ or jobs/ is longer than 100 lines, so each one reads in a
 * screen or two; a longer one is split into named steps. Measured with the
 * TypeScript compiler's own parse: every function declaration, function
 * expression, arrow function, method, constructor and accessor, from its first
 * line (its doc comment left out) to its last, nested functions counted within
 * the function that holds them too. A function over the limit fails with its
 * file, name, line and length (`src/a.ts › run (line 12): 130 lines`).
 *
 * The only exceptions are listed below with why; nothing else may be added.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const MAX_LINES = 100;

/**
 * Functions of the push that are longer, by `file › name`. The push is being restructured into
 * src/sync/push/ (issue #34), which removes them: this list is to become empty, never longer.
 */
const EXCEPTIONS: ReadonlySet<string> = new Set<string>([]);

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [join(dir, e.name)] : [],
  );
}

const rel = (file: string): string => relative(ROOT, file).split(sep).join('/');

export interface MeasuredFunction {
  file: string;
  name: string;
  line: number;
  lines: number;
}

/**
 * The name a reader would look for: the declaration's, the variable's or property's it is assigned to
 * (`Class.method` for a class's), else where it sits (`<callback of x in f>`, `<anonymous in f>`).
 */
function nameOf(node: ts.FunctionLikeDeclaration, sf: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return `${holderOf(node, sf)}.constructor`;
  if (node.name !== undefined) {
    const own = node.name.getText(sf);
    return ts.isMethodDeclaration(node) || ts.isAccessor(node) ? `${holderOf(node, sf)}.${own}` : own;
  }
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(sf);
  const where = enclosingName(node, sf);
  if (ts.isCallExpression(parent)) return `<callback of ${parent.expression.getText(sf).slice(0, 40)}${where}>`;
  return `<anonymous${where}>`;
}

/** The class or object a method belongs to, by the name it is known by. */
function holderOf(node: ts.Node, sf: ts.SourceFile): string {
  const holder = node.parent;
  if (ts.isClassLike(holder)) return holder.name?.getText(sf) ?? '<class>';
  const named = holder.parent;
  if (named !== undefined && (ts.isVariableDeclaration(named) || ts.isPropertyAssignment(named))) return named.name.getText(sf);
  return `<object${enclosingName(holder, sf)}>`;
}

/** ` in <name>` of the nearest function around `node`, or '' at a file's top level. */
function enclosingName(node: ts.Node, sf: ts.SourceFile): string {
  for (let up = node.parent; up !== undefined; up = up.parent) {
    if (ts.isFunctionLike(up) && 'body' in up && up.body !== undefined) return ` in ${nameOf(up as ts.FunctionLikeDeclaration, sf)}`;
  }
  return '';
}

/** Every function of a file with its length in lines. */
export function measureFunctions(file: string): MeasuredFunction[] {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: MeasuredFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const fn = node as ts.FunctionLikeDeclaration;
      const first = sf.getLineAndCharacterOfPosition(fn.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(fn.getEnd()).line;
      found.push({ file: rel(file), name: nameOf(fn, sf), line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe('function length', () => {
  const files = [...walk(join(ROOT, 'src')), ...walk(join(ROOT, 'jobs'))];
  const all = files.flatMap(measureFunctions);

  it('measures what a reader sees: the functions of every file, nested ones too', () => {
    expect(files.length).toBeGreaterThan(100);
    const planSchema = all.find((f) => f.file === 'src/mirror/schema-plan.ts' && f.name === 'planSchema');
    expect(planSchema?.lines).toBeGreaterThan(20);
    expect(all.some((f) => f.name.startsWith('<callback of describe'))).toBe(false);
    const handler = all.find((f) => f.file === 'src/webhooks/receiver.ts' && f.name === '<anonymous in createHookReceiver>');
    expect(handler?.lines).toBeGreaterThan(20);
  });

  it(`no function in src/ or jobs/ is longer than ${MAX_LINES} lines (but the listed exceptions)`, () => {
    const long = all
      .filter((f) => f.lines > MAX_LINES && !EXCEPTIONS.has(`${f.file} › ${f.name}`))
      .map((f) => `${f.file} › ${f.name} (line ${f.line}): ${f.lines} lines`);
    expect(long).toEqual([]);
  });

  it('every exception still exists and is still long (the list only shrinks)', () => {
    const stillLong = new Set(all.filter((f) => f.lines > MAX_LINES).map((f) => `${f.file} › ${f.name}`));
    const stale = [...EXCEPTIONS].filter((e) => !stillLong.has(e));
    expect(stale).toEqual([]);
    for (const e of EXCEPTIONS) expect(e).toMatch(/^src\/sync\/(push|settle-|lost-creates|conflicts)/);
  });
});
