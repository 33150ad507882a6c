/**
 * ListDataID generation: snowflake-like 19-digit numbers that increase with
 * the creation instant, all beyond 2^53 so a client that parses them as JS
 * numbers loses digits.
 */

const BASE = 1_000_000_000_000_000_000n; // smallest 19-digit number
const EPOCH_MS = Date.UTC(2000, 0, 1);
const SEQUENCE_BITS = 20n;

/**
 * The ID for an item created at `ms`, `sequence` distinguishing items of the
 * same millisecond. Layout: milliseconds since 2000 above 20 low bits holding
 * a 12-bit sequence and an odd 8-bit "worker" number. The odd low byte keeps
 * every ID off the doubles grid (spacing 256 at this size), so a client that
 * parses an ID as a JS number always gets a different number.
 */
export function snowflakeId(ms: number, sequence: number): bigint {
  const whole = Math.max(0, Math.floor(ms - EPOCH_MS));
  const worker = ((whole % 127) << 1) | 1;
  return BASE + (BigInt(whole) << SEQUENCE_BITS) + BigInt(((sequence & 0xfff) << 8) | worker);
}

/** A 19-digit user ID derived from a seed and an index (deterministic, distinct per index). */
export function userIdFor(seed: number, index: number): string {
  const n = 4_000_000_000_000_000_000n + BigInt(seed % 1_000_000) * 1_000_000_000n + BigInt(index) * 7919n + 1n;
  return n.toString();
}
