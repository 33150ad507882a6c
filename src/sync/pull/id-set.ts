/**
 * The set of item IDs a run has seen, small enough for a 1,000,000-item
 * backfill: platform IDs are 19-digit numbers, kept here as 64-bit integers in
 * an open-addressing table (8 bytes an ID, against about 100 for a `Set` of
 * strings). IDs that are not such numbers go to a plain `Set`.
 */
const EMPTY = 0n;
const MAX_U64 = (1n << 64n) - 1n;

export class IdSet {
  private table = new BigUint64Array(1024);
  private used = 0;
  private readonly others = new Set<string>();

  get size(): number {
    return this.used + this.others.size;
  }

  has(id: string): boolean {
    const n = numeric(id);
    if (n === undefined) return this.others.has(id);
    return this.table[this.slot(this.table, n)] === n;
  }

  /** Adds `id`; false when it was there already. */
  add(id: string): boolean {
    const n = numeric(id);
    if (n === undefined) {
      if (this.others.has(id)) return false;
      this.others.add(id);
      return true;
    }
    const i = this.slot(this.table, n);
    if (this.table[i] === n) return false;
    this.table[i] = n;
    this.used++;
    if (this.used * 2 > this.table.length) this.grow();
    return true;
  }

  /** Where `n` is, or the empty slot it would take (linear probing). */
  private slot(table: BigUint64Array, n: bigint): number {
    const mask = table.length - 1;
    // The low bits of a snowflake are a sequence; mixing the halves spreads them.
    let i = (Number(n & 0xffffffffn) ^ Number((n >> 29n) & 0xffffffffn)) & mask;
    while (table[i] !== EMPTY && table[i] !== n) i = (i + 1) & mask;
    return i;
  }

  private grow(): void {
    const old = this.table;
    this.table = new BigUint64Array(old.length * 2);
    for (const n of old) if (n !== EMPTY) this.table[this.slot(this.table, n)] = n;
  }
}

/** The ID as a 64-bit integer, when it is one (and not 0, which marks an empty slot). */
function numeric(id: string): bigint | undefined {
  if (id.length === 0 || id.length > 20 || !/^[1-9]\d*$/.test(id)) return undefined;
  const n = BigInt(id);
  return n <= MAX_U64 ? n : undefined;
}
