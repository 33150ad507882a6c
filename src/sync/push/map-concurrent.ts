/**
 * Runs `fn` over the items, `limit` at a time. The first error stops new work; the calls under way finish before it is thrown.
 * Once `stop()` says so no new item starts; the results of the items that ran are returned
 * (test/sync/write-back-faults.test.ts: a shutdown finishes the changes in flight).
 */
export async function mapConcurrent<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
  stop: () => boolean = () => false,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure && !stop() && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.error;
  return out.filter((_, i) => i < next);
}
