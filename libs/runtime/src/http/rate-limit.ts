/** Requests allowed per key: a burst, refilled evenly over the window. */
export interface RateLimit {
  readonly burst: number;
  readonly perMinute: number;
}

export type RateDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

/** Above this many tracked keys, full buckets (idle clients) are forgotten. */
const PRUNE_ABOVE_KEYS = 10_000;

/** Token buckets per key (client address or IPv6 /64, callback host), in process: each replica limits on its own. */
export function createRateLimiter(limit: RateLimit, now: () => number = Date.now): (key: string) => RateDecision {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const refillPerMs = limit.perMinute / 60_000;
  const level = (b: { tokens: number; at: number }, t: number) => Math.min(limit.burst, b.tokens + (t - b.at) * refillPerMs);
  return (key) => {
    const t = now();
    if (buckets.size > PRUNE_ABOVE_KEYS) {
      for (const [k, b] of buckets) if (level(b, t) >= limit.burst) buckets.delete(k);
    }
    const bucket = buckets.get(key) ?? { tokens: limit.burst, at: t };
    const tokens = level(bucket, t);
    if (tokens < 1) {
      buckets.set(key, { tokens, at: t });
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / refillPerMs / 1000)) };
    }
    buckets.set(key, { tokens: tokens - 1, at: t });
    return { allowed: true };
  };
}
