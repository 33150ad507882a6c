/**
 * Waiting for work at most so long: serve's shutdown, its background reads
 * and its prunes each give the work under way a bound, then go on without it
 * (the work itself is not stopped; it settles in the background).
 */

/** Resolves 'done' once `work` settles well, or 'timeout' after `ms`; rejects if `work` rejects first. */
export async function waitFor(work: Promise<unknown>, ms: number): Promise<'done' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), Math.max(0, ms));
    timer.unref();
  });
  try {
    return await Promise.race([work.then(() => 'done' as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
