/**
 * Secret values (apiKey, database password) never reach a message, a log line,
 * a stored run or a URL. The config registers every secret it resolves here;
 * everything that prints or stores text can scrub with `knownSecrets()`.
 */

const known = new Set<string>();

/** Shorter values are not masked: they would mangle ordinary words. */
const MIN_SECRET_LENGTH = 4;

/**
 * Values that are published, not secret: the emulator's default API key
 * (`DEFAULT_API_KEY` in src/emulator/build-store.ts, printed in the README and
 * by the demo). Masking it would only turn the demo's advice into
 * `PLATFORM_API_KEY=[redacted]`.
 */
export const PUBLIC_VALUES: ReadonlySet<string> = new Set(['emulator-key']);

/** Remembers secret values (raw) for `knownSecrets()`; short ones and published ones are ignored. */
export function registerSecrets(values: Iterable<string | undefined>): void {
  for (const v of values) if (typeof v === 'string' && v.length >= MIN_SECRET_LENGTH && !PUBLIC_VALUES.has(v)) known.add(v);
}

/** Every secret registered so far in this process. */
export function knownSecrets(): string[] {
  return [...known];
}

/** The forms a secret takes in text: raw, URL-encoded, JSON-escaped (and JSON-escaped URL-encoded). */
export function secretForms(secret: string): string[] {
  const encoded = encodeURIComponent(secret);
  const json = (s: string) => JSON.stringify(s).slice(1, -1);
  // Longest first, so a form containing another is replaced whole.
  return [...new Set([secret, encoded, json(secret), json(encoded)])].sort((a, b) => b.length - a.length);
}

/** Replaces every occurrence of a secret, in any of its forms, with [redacted]. */
export function scrubSecrets(text: string, secrets: Iterable<string> = known): string {
  let out = text;
  for (const s of secrets) {
    if (s.length < MIN_SECRET_LENGTH) continue;
    for (const form of secretForms(s)) {
      if (out.includes(form)) out = out.split(form).join('[redacted]');
    }
  }
  return out;
}

/** The password of a database URL (decoded), if it has one. */
export function passwordOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const pw = new URL(url).password;
    return pw ? decodeURIComponent(pw) : undefined;
  } catch {
    return /\/\/[^:/@]+:([^@]*)@/.exec(url)?.[1];
  }
}
