/**
 * deploy/Dockerfile, read and carried out without a Docker engine: each stage
 * gets a directory standing for its root filesystem, COPY copies files from
 * the repository (or from an earlier stage's directory), RUN runs the command
 * with its absolute paths moved under that directory. The one step replaced
 * is `npm ci`: the repository's installed node_modules is linked instead of
 * installing it again. An instruction it does not know is an error, so a step
 * added to the Dockerfile cannot be skipped silently.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const DOCKERFILE = join(REPO, 'deploy/Dockerfile');

export interface Instruction {
  op: string;
  args: string;
  line: number;
}

export interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Stages of the Dockerfile, continuation lines joined and comments dropped. */
export function parseDockerfile(text = readFileSync(DOCKERFILE, 'utf8')): Stage[] {
  const stages: Stage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i]!.trim();
    if (!line || line.startsWith('#')) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1).trimEnd()} ${lines[++i]!.trim()}`;
    const m = /^(\w+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`Dockerfile line ${start + 1}: cannot read "${line}"`);
    const op = m[1]!.toUpperCase();
    const args = m[2]!;
    if (op === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      stages.push({ from: from![1]!, name: from![2], instructions: [] });
    } else {
      const stage = stages.at(-1);
      if (!stage) throw new Error(`Dockerfile line ${start + 1}: ${op} before FROM`);
      stage.instructions.push({ op, args, line: start + 1 });
    }
  }
  return stages;
}

/** A COPY's options, sources and destination. */
export function parseCopy(args: string): { from: string | undefined; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
  const paths = words.filter((w) => !w.startsWith('--'));
  return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

/** ENV's key=value pairs (values without spaces, as this Dockerfile writes them). */
export function parseEnv(args: string): Record<string, string> {
  return Object.fromEntries(args.split(/\s+/).map((pair) => pair.split('=', 2) as [string, string]));
}

/** The RUN commands of every stage, in order. */
export function runCommands(stages: Stage[]): string[] {
  return stages.flatMap((s) => s.instructions.filter((i) => i.op === 'RUN').map((i) => i.args));
}

export interface BuiltStage {
  stage: Stage;
  /** The directory standing for the stage's root filesystem. */
  root: string;
  workdir: string;
  env: Record<string, string>;
  /** An absolute path inside the stage, as a path on this machine. */
  path(inside: string): string;
  /** Commands run (after path mapping), for the record. */
  ran: string[];
}

/** Instructions that only describe the image: nothing to do outside Docker. */
const DESCRIPTIVE = new Set(['USER', 'EXPOSE', 'HEALTHCHECK', 'ENTRYPOINT', 'CMD', 'LABEL', 'ARG']);

/**
 * Carries out every stage under `base`; `env` is the environment RUN commands start from.
 * Returns the stages with their directories (the last is the image).
 */
export function buildDockerfile(base: string, env: Record<string, string>, stages = parseDockerfile()): BuiltStage[] {
  const built: BuiltStage[] = [];
  for (const [index, stage] of stages.entries()) {
    const root = join(base, `stage-${index}${stage.name ? `-${stage.name}` : ''}`);
    mkdirSync(root, { recursive: true });
    const path = (inside: string): string => join(root, inside);
    const current: BuiltStage = { stage, root, workdir: '/', env: {}, path, ran: [] };
    for (const ins of stage.instructions) {
      const where = `Dockerfile line ${ins.line}`;
      if (ins.op === 'WORKDIR') {
        current.workdir = ins.args;
        mkdirSync(path(ins.args), { recursive: true });
      } else if (ins.op === 'ENV') {
        Object.assign(current.env, parseEnv(ins.args));
      } else if (ins.op === 'COPY') {
        const { from, sources, dest } = parseCopy(ins.args);
        const source = from ? built.find((b) => b.stage.name === from) : undefined;
        if (from && !source) throw new Error(`${where}: no stage named ${from}`);
        const target = dest.startsWith('/') ? path(dest) : join(path(current.workdir), dest);
        for (const src of sources) {
          const origin = source ? source.path(src) : join(REPO, src);
          const into = dest.endsWith('/') || sources.length > 1 ? join(target, src.split('/').at(-1)!) : target;
          cpSync(origin, into, { recursive: true });
        }
      } else if (ins.op === 'RUN') {
        const cwd = path(current.workdir);
        if (/^npm ci\b/.test(ins.args)) {
          symlinkSync(join(REPO, 'node_modules'), join(cwd, 'node_modules'), 'dir');
          current.ran.push('(npm ci: the repository node_modules linked)');
          continue;
        }
        const command = ins.args.replace(/(^|\s)\/(?=[\w.*-])/g, `$1${root}/`);
        current.ran.push(command);
        const r = spawnSync('sh', ['-c', command], { cwd, env: { ...env, ...current.env }, encoding: 'utf8', timeout: 240_000 });
        if (r.status !== 0) throw new Error(`${where}: RUN ${ins.args} exited ${r.status}\n${r.stdout}\n${r.stderr}`);
      } else if (!DESCRIPTIVE.has(ins.op)) {
        throw new Error(`${where}: ${ins.op} is not an instruction this check knows how to carry out`);
      }
    }
    built.push(current);
  }
  return built;
}
