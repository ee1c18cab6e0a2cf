import { AckPolicy, DeliverPolicy, type Consumer, type ConsumerInfo, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';

/** How long a consumer left behind (its reader's process gone mid-read) outlives its last fetch. */
const ABANDONED_CONSUMER_INACTIVE_MS = 30_000;

/**
 * Runs `read` with a pull consumer of its own over everything `stream` holds under `filter` (no acks,
 * memory storage, one replica; with `headersOnly`, messages without their payloads), then deletes it. The clients' readers (the object store's `get()`, the
 * KV's `history()`) leave theirs on the stream until the server's 5-minute inactivity threshold: one
 * per dataset read and per hub listing, 116 MB of nats-server memory at 233 of them in a soak.
 */
export async function withReadOnceConsumer<T>(
  js: JetStreamClient,
  stream: string,
  filter: string,
  read: (consumer: Consumer, info: ConsumerInfo) => Promise<T>,
  { headersOnly = false }: { readonly headersOnly?: boolean } = {},
): Promise<T> {
  const manager = await js.jetstreamManager(false);
  const info = await manager.consumers.add(stream, {
    filter_subject: filter,
    headers_only: headersOnly,
    deliver_policy: DeliverPolicy.All,
    ack_policy: AckPolicy.None,
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: nanos(ABANDONED_CONSUMER_INACTIVE_MS),
  });
  try {
    return await read(js.consumers.getConsumerFromInfo(info), info);
  } finally {
    // Not awaited: the reader needs nothing more from it, and the round trip would add to every read. On
    // a connection closed meanwhile the consumer goes after its inactivity threshold.
    manager.consumers.delete(stream, info.name).catch(() => undefined);
  }
}

/**
 * Up to `count` messages of `consumer`, `perFetch` at a time (one fetch of everything can exceed what a
 * server queues for a client); fewer when a fetch ends short, nothing more having come within
 * `expiresMs`. `signal` ends a fetch still waiting, and throws.
 */
export async function* fetchUpTo(consumer: Consumer, count: number, { perFetch, expiresMs, signal }: { readonly perFetch: number; readonly expiresMs: number; readonly signal?: AbortSignal }): AsyncGenerator<JsMsg> {
  for (let delivered = 0; delivered < count; ) {
    signal?.throwIfAborted();
    const wanted = Math.min(perFetch, count - delivered);
    const messages = await consumer.fetch({ max_messages: wanted, expires: expiresMs });
    const stop = () => messages.stop();
    signal?.addEventListener('abort', stop, { once: true });
    if (signal?.aborted) stop();
    let received = 0;
    try {
      for await (const message of messages) {
        received++;
        delivered++;
        yield message;
        if (received === wanted) break;
      }
    } finally {
      signal?.removeEventListener('abort', stop);
    }
    signal?.throwIfAborted();
    if (received < wanted) return;
  }
}
