import type { LookupAddress } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import { getCACertificates } from 'node:tls';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { BoundedLru, ipLiteral } from '@reviews/runtime';
import { isPublicAddress } from './address-policy.js';
import { isLocalhostName } from './host-name.js';

/**
 * The one HTTP client for everything the hub sends to subscribers (verification, denial, delivery).
 * Callback URLs are attacker-chosen, so every connection is checked where it is made: resolved
 * addresses in `lookup`, IP literals (which skip `lookup`) in the connector. Redirects are never
 * followed (undici's `request` does not), every phase has a timeout, and response bodies are read
 * only up to a cap, or not at all.
 */
export interface OutboundOptions {
  /** WEBSUB_ALLOW_PRIVATE_CALLBACKS: lift the private-address refusal (tests, local development). */
  readonly allowPrivateAddresses: boolean;
  readonly userAgent: string;
  readonly timeouts?: Partial<OutboundTimeouts>;
  /** Concurrent connections (and so requests) per callback origin; one slow subscriber cannot hog the hub. */
  readonly connectionsPerOrigin?: number;
  /** Extra trusted CA certificates (PEM) on top of the system store and NODE_EXTRA_CA_CERTS. */
  readonly tls?: { readonly ca?: string | readonly string[] };
  /** Tests only: the resolver of callback host names, asking the test's own DNS server. */
  readonly resolver?: Resolver;
}

export interface OutboundTimeouts {
  readonly connectMs: number;
  readonly headersMs: number;
  /** From the moment the request has its connection slot; the wait for one counts apart (`queueMs`). */
  readonly totalMs: number;
  /** Longest wait for one of the origin's connections before the request is given up as `busy`, unsent. */
  readonly queueMs: number;
}

export const DEFAULT_TIMEOUTS: OutboundTimeouts = { connectMs: 5_000, headersMs: 10_000, totalMs: 15_000, queueMs: 10_000 };

/**
 * How long a delivery is held by the replica running it (its claim on the subscription, its job's
 * ack wait) before another may take it over: one request to the subscriber at its longest (the wait
 * for a connection, then the whole timeout) and 5 s for the store writes around it.
 */
export const DELIVERY_HOLD_MS = DEFAULT_TIMEOUTS.queueMs + DEFAULT_TIMEOUTS.totalMs + 5_000;

/** `busy`: never sent, every connection to the origin stayed taken by others; the subscriber did nothing wrong. */
export type FailureReason = 'blocked' | 'timeout' | 'tls' | 'network' | 'busy';

export type OutboundResult =
  | { readonly ok: true; readonly status: number; readonly body: Buffer; readonly truncated: boolean }
  | { readonly ok: false; readonly reason: FailureReason; readonly detail: string };

export interface OutboundRequest {
  readonly method: 'GET' | 'POST';
  readonly url: string;
  readonly headers?: Record<string, string>;
  readonly body?: Buffer;
  /**
   * Bytes of the response body kept; the rest is discarded (and the connection dropped). With 0 the
   * body is not waited for: the answer is complete with its status line and headers (`body` empty).
   */
  readonly keepBodyBytes: number;
}

export interface OutboundClient {
  send(req: OutboundRequest): Promise<OutboundResult>;
  /**
   * False when `url` would be refused as `busy` at once: its origin is slow (its requests still time
   * out a whole timeout after the first did) and SLOW_ORIGINS_CONCURRENCY requests to such origins are
   * already in flight. A caller holding a worker for it gives the work back instead, before writing anything.
   */
  admits(url: string): boolean;
  close(): Promise<void>;
}

/**
 * Requests at once to slow origins (timing out for longer than a timeout), all together. A callback
 * that accepts connections and never answers (a tarpit, or a subscriber gone dark) holds a worker for
 * the whole timeout; without this bound a few such origins, or many on one attacker's wildcard DNS,
 * held every delivery worker while the notifications to everyone else waited.
 */
export const SLOW_ORIGINS_CONCURRENCY = 8;
/** Origins remembered while their requests time out; the oldest is forgotten first, so an attacker's churn cannot grow it. */
const SLOW_ORIGINS_REMEMBERED = 10_000;

const BLOCKED = 'E_WEBSUB_BLOCKED_DESTINATION';

class BlockedDestinationError extends Error {
  readonly code = BLOCKED;
  constructor(address: string) {
    super(`destination ${address} is not a public address`);
  }
}

/**
 * How long one DNS query of a callback host waits for an answer, and how often it is asked: together under the
 * connect timeout, so a name that never resolves fails as the connection would.
 */
const DNS_QUERY_TIMEOUT_MS = 1_500;
const DNS_QUERY_TRIES = 2;

/**
 * Resolves callback host names with DNS queries (c-ares), on the event loop, each with its own timeout. The OS
 * resolver (getaddrinfo, dns.lookup) ran on libuv's thread pool, two at a time, and could not be cancelled: an
 * attacker's subscriptions to names whose DNS never answers (1 a second, within the rate limits) queued every
 * later lookup behind 10 s each, so real subscribers' verifications and deliveries timed out, and after three
 * such failures their subscriptions were removed. A query asks for the name as given, without the search
 * domains of resolv.conf, and /etc/hosts is not read: callbacks are public names.
 */
async function resolvedAddresses(resolver: Resolver, hostname: string): Promise<LookupAddress[]> {
  if (isLocalhostName(hostname)) return [{ address: '127.0.0.1', family: 4 }, { address: '::1', family: 6 }];
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
  const addresses: LookupAddress[] = [
    ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ];
  if (addresses.length > 0) return addresses;
  // Neither family answered: the IPv4 query says why (ENOTFOUND, ETIMEOUT…), as the usual one.
  throw v4.status === 'rejected' ? v4.reason : noAddress(`no address for ${hostname}`);
}

function noAddress(message: string): Error {
  return Object.assign(new Error(message), { code: 'ENOTFOUND' });
}

/** Resolves `hostname`, but refuses the whole name if ANY of its addresses is not public. */
function publicOnlyLookup(resolver: Resolver): LookupFunction {
  return (hostname, options, callback) => {
    resolvedAddresses(resolver, hostname).then(
      (resolved) => {
        const refused = resolved.find((a) => !isPublicAddress(a.address));
        if (refused) return callback(new BlockedDestinationError(refused.address), '', 0);
        const addresses = options.family === 4 || options.family === 6 ? resolved.filter((a) => a.family === options.family) : resolved;
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        const first = addresses[0];
        if (!first) return callback(noAddress(`no IPv${options.family} address for ${hostname}`), '', 0);
        return callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

export function createOutboundClient(options: OutboundOptions): OutboundClient {
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const extraCa = options.tls?.ca === undefined ? [] : typeof options.tls.ca === 'string' ? [options.tls.ca] : [...options.tls.ca];
  // Passing `ca` replaces Node's default store, so start from it: bundled roots + NODE_EXTRA_CA_CERTS.
  const ca = extraCa.length > 0 ? [...getCACertificates('default'), ...extraCa] : undefined;
  const connectTls = buildConnector({
    timeout: timeouts.connectMs,
    ...(ca ? { ca } : {}),
    ...(options.allowPrivateAddresses ? {} : { lookup: publicOnlyLookup(options.resolver ?? new Resolver({ timeout: DNS_QUERY_TIMEOUT_MS, tries: DNS_QUERY_TRIES })) }),
  });
  const connect: buildConnector.connector = (opts, callback) => {
    const literal = ipLiteral(opts.hostname);
    if (!options.allowPrivateAddresses && literal !== null && !isPublicAddress(literal)) {
      callback(new BlockedDestinationError(literal), null);
      return;
    }
    connectTls(opts, callback);
  };
  const connections = options.connectionsPerOrigin ?? 8;
  const slots = new OriginSlots(connections);
  /**
   * Per origin, since when its requests have been timing out (none answered in time since), and whether
   * it is slow: when a request still times out a whole timeout after the first did. A subscriber's one
   * hiccup must not put it among the tarpits, behind them for the few slots they share (a review measured
   * 57 s instead of 1.6 s), and its callbacks notified together time out together, as one hiccup.
   */
  const timingOut = new BoundedLru<{ readonly since: number; readonly slow: boolean }>(SLOW_ORIGINS_REMEMBERED, Number.POSITIVE_INFINITY, () => 0);
  const isSlow = (origin: string) => timingOut.get(origin)?.slow === true;
  const timedOut = (origin: string) => {
    const now = performance.now();
    const since = timingOut.get(origin)?.since ?? now;
    timingOut.set(origin, { since, slow: now - since >= timeouts.totalMs });
  };
  let toSlowOrigins = 0;
  const agent = new Agent({
    connect,
    connections,
    headersTimeout: timeouts.headersMs,
    bodyTimeout: timeouts.headersMs,
    keepAliveTimeout: 4_000,
  });

  return {
    async send(req) {
      const url = URL.parse(req.url);
      if (url === null) return { ok: false, reason: 'network', detail: 'not a URL' };
      const { origin } = url;
      const slow = isSlow(origin);
      if (slow) {
        if (toSlowOrigins >= SLOW_ORIGINS_CONCURRENCY) return { ok: false, reason: 'busy', detail: `${origin} keeps timing out; ${SLOW_ORIGINS_CONCURRENCY} requests to such origins are in flight` };
        toSlowOrigins++;
      }
      let result: OutboundResult;
      try {
        result = await sendInSlot(req, url);
      } finally {
        if (slow) toSlowOrigins--;
      }
      if (result.ok) timingOut.delete(origin);
      else if (result.reason === 'timeout') timedOut(origin);
      return result;
    },
    admits(url) {
      const origin = URL.parse(url)?.origin;
      return origin === undefined || !isSlow(origin) || toSlowOrigins < SLOW_ORIGINS_CONCURRENCY;
    },
    close: () => agent.close(),
  };

  /**
   * The hub sends up to 64 deliveries at once, and many may go to one origin (a webhook platform
   * gives each user a callback): queued inside the agent, they spent their timeout waiting, and
   * subscribers answering every request in time were counted failing, sent twice, even removed.
   */
  async function sendInSlot(req: OutboundRequest, url: URL): Promise<OutboundResult> {
    const { origin } = url;
    const release = await slots.acquire(origin, timeouts.queueMs);
    if (release === null) return { ok: false, reason: 'busy', detail: `all ${connections} connections to ${origin} stayed busy for ${timeouts.queueMs} ms` };
    const signal = AbortSignal.timeout(timeouts.totalMs);
    try {
      const response = await agent.request({
        origin,
        path: originForm(url),
        method: req.method,
        headers: { 'user-agent': options.userAgent, ...req.headers },
        ...(req.body ? { body: req.body } : {}),
        signal,
      });
      if (req.keepBodyBytes === 0) {
        // A body that already arrived whole leaves the connection reusable; one still arriving
        // (however slowly) is cut off with its connection instead of holding the answer back.
        response.body.on('error', ignore).destroy();
        return { ok: true, status: response.statusCode, body: Buffer.alloc(0), truncated: false };
      }
      const { body, truncated } = await readCapped(response.body, req.keepBodyBytes);
      return { ok: true, status: response.statusCode, body, truncated };
    } catch (error) {
      return classify(error, signal);
    } finally {
      release();
    }
  }
}

/**
 * The request target of `url` as the subscriber wrote it (RFC 9112 §3.2.1): pathname + search, which
 * undici's `request(url)` sends, drops an empty query's `?`, so a callback `…/cb?` verified at
 * `/cb?hub.mode=…` was notified at `/cb`, another resource (W3C WebSub §7: the callback URL).
 */
function originForm(url: URL): string {
  return url.pathname + (url.search === '' && url.href.endsWith('?') ? '?' : url.search);
}

/** At most `limit` requests in flight per origin, the rest waiting their turn in order, each for a bounded time. */
class OriginSlots {
  readonly #byOrigin = new Map<string, { active: number; readonly waiting: Array<() => void> }>();

  constructor(private readonly limit: number) {}

  /** Resolves with the function that frees the slot, or null when none came free within `waitMs`. */
  acquire(origin: string, waitMs: number): Promise<(() => void) | null> {
    let slots = this.#byOrigin.get(origin);
    if (slots === undefined) this.#byOrigin.set(origin, (slots = { active: 0, waiting: [] }));
    const entry = slots;
    const release = () => {
      entry.active--;
      const next = entry.waiting.shift();
      if (next !== undefined) next();
      else if (entry.active === 0) this.#byOrigin.delete(origin);
    };
    if (entry.active < this.limit) {
      entry.active++;
      return Promise.resolve(release);
    }
    return new Promise((resolve) => {
      const take = () => {
        clearTimeout(timer);
        entry.active++;
        resolve(release);
      };
      const timer = setTimeout(() => {
        entry.waiting.splice(entry.waiting.indexOf(take), 1);
        resolve(null);
      }, waitMs);
      entry.waiting.push(take);
    });
  }
}

/** A destroyed response body reports its abort as an error nobody is waiting for. */
const ignore = (): void => undefined;

async function readCapped(stream: Dispatcher.ResponseData['body'], cap: number): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let kept = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (kept + chunk.length > cap) {
      chunks.push(chunk.subarray(0, cap - kept));
      stream.destroy();
      return { body: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(chunk);
    kept += chunk.length;
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

function classify(error: unknown, signal: AbortSignal): OutboundResult {
  // Walk the cause chain by shape, not `instanceof`: errors may come from another realm.
  const chain: Array<{ message?: unknown; code?: unknown; cause?: unknown }> = [];
  for (let e: unknown = error; typeof e === 'object' && e !== null && chain.length < 5; e = (e as { cause?: unknown }).cause) chain.push(e);
  const codes = chain.map((e) => String(e.code ?? ''));
  const detail = chain.map((e) => String(e.message ?? '')).join(': ');
  if (codes.includes(BLOCKED)) return { ok: false, reason: 'blocked', detail };
  if (signal.aborted || codes.some((c) => c.includes('TIMEOUT'))) return { ok: false, reason: 'timeout', detail };
  if (codes.some((c) => c.startsWith('ERR_TLS') || c.startsWith('ERR_SSL') || c.includes('CERT') || c.includes('SELF_SIGNED') || c.startsWith('UNABLE_TO'))) {
    return { ok: false, reason: 'tls', detail };
  }
  return { ok: false, reason: 'network', detail };
}
