/**
 * Stable LSD radix sort of slots by unsigned 32-bit keys (11-bit digits, so
 * three passes at most, skipping digits all keys share). Sorting a million
 * slots takes tens of milliseconds, where a comparator sort takes most of a
 * second; stability keeps the input order (ListDataID) as the tie-break.
 */
const BITS = 11;
const RADIX = 1 << BITS;
const MASK = RADIX - 1;

export function radixSortSlots(slots: Int32Array, keys: Uint32Array): Int32Array {
  const n = slots.length;
  let srcS: Int32Array = slots;
  let srcK: Uint32Array = keys;
  let dstS: Int32Array = new Int32Array(n);
  let dstK: Uint32Array = new Uint32Array(n);
  const counts = new Uint32Array(RADIX);
  for (let shift = 0; shift < 32; shift += BITS) {
    counts.fill(0);
    for (let i = 0; i < n; i++) {
      const d = ((srcK[i] as number) >>> shift) & MASK;
      counts[d] = (counts[d] as number) + 1;
    }
    // All keys share this digit: the pass would not move anything.
    if (n > 0 && counts[((srcK[0] as number) >>> shift) & MASK] === n) continue;
    let sum = 0;
    for (let d = 0; d < RADIX; d++) {
      const c = counts[d] as number;
      counts[d] = sum;
      sum += c;
    }
    for (let i = 0; i < n; i++) {
      const k = srcK[i] as number;
      const d = (k >>> shift) & MASK;
      const pos = counts[d] as number;
      counts[d] = pos + 1;
      dstS[pos] = srcS[i] as number;
      dstK[pos] = k;
    }
    const ts = srcS;
    srcS = dstS;
    dstS = ts === slots ? new Int32Array(n) : ts;
    const tk = srcK;
    srcK = dstK;
    dstK = tk === keys ? new Uint32Array(n) : tk;
  }
  return srcS === slots ? slots.slice() : srcS;
}
