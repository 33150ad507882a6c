/**
 * Where each effective setting came from, for `listsync config show`: the config file (a `${NAME}`
 * in it names the variable and the layer that gave it), a variable listsync reads in place of a
 * missing key (`PLATFORM_API_KEY`..., from the environment or one of the two `.env` files), or the
 * default. Pure: config.ts reads the files (configLayers). (test/config-show.test.ts)
 */
import { KEYS_FROM_ENVIRONMENT, shownValue } from './config.js';

export interface EnvLayer {
  source: string;
  values: Readonly<Record<string, string | undefined>>;
}

export interface SettingSource {
  key: string;
  value: string;
  source: string;
}

type Path = (string | number)[];

/** Every leaf of the effective config, in order, with its value (secrets masked) and where it came from. */
export function settingSources(effective: unknown, file: unknown, env: readonly EnvLayer[]): SettingSource[] {
  return leaves(effective, []).map(([path, value]) => {
    const key = keyOf(path);
    return { key, value: shownValue(key, value), source: sourceOf(path, key, file, env) };
  });
}

function leaves(value: unknown, path: Path): [Path, unknown][] {
  if (Array.isArray(value) && value.some((v) => isObject(v))) return value.flatMap((v, i) => leaves(v, [...path, i]));
  if (isObject(value) && Object.keys(value).length > 0) return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  return [[path, value]];
}

function sourceOf(path: Path, key: string, file: unknown, env: readonly EnvLayer[]): string {
  const variable = KEYS_FROM_ENVIRONMENT[key];
  // LISTSYNC_LOG_LEVEL wins over the file's log.level; the other variables only fill a key the file leaves out.
  if (variable && key === 'log.level' && layerOf(variable, env)) return `${variable} from ${layerOf(variable, env)}`;
  const inFile = valueAt(file, path);
  if (inFile !== undefined) {
    const names = typeof inFile === 'string' ? [...inFile.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!) : [];
    return names.length ? `file, ${names.map((n) => `${n} from ${layerOf(n, env) ?? '(not set)'}`).join(', ')}` : 'file';
  }
  if (variable && layerOf(variable, env)) return `${variable} from ${layerOf(variable, env)}`;
  return 'default';
}

/** The strongest layer that sets `name` (the environment over the `.env` beside the config over the one in the working directory). */
function layerOf(name: string, env: readonly EnvLayer[]): string | undefined {
  for (let i = env.length - 1; i >= 0; i--) if (env[i]!.values[name] !== undefined) return env[i]!.source;
  return undefined;
}

function valueAt(root: unknown, path: Path): unknown {
  let cur: unknown = root;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[p];
  }
  return cur;
}

const keyOf = (path: Path): string => path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
