/**
 * Bounded polling for asynchronous effects (a replica picking up a publish, a reconnect): retry
 * `probe` until it neither throws (e.g. a failed `expect`) nor returns `false`, failing with the last
 * error at the deadline.
 */
export async function eventually<T>(probe: () => Promise<T> | T, { timeoutMs = 10_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = new Error('condition never became true');
  for (;;) {
    try {
      const value = await probe();
      if (value !== false) return value;
      lastError = new Error('condition still false');
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const message = lastError instanceof Error ? lastError.message : String(lastError);
      throw new Error(`not reached within ${timeoutMs} ms: ${message}`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** `eventually` for a plain condition, failing with `what` in the message so a timeout says what never happened. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000, what = 'condition'): Promise<void> {
  try {
    await eventually(async () => (await condition()) || false, { timeoutMs, intervalMs: 20 });
  } catch {
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
  }
}
