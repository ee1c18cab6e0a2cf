import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { Logger } from '@reviews/runtime';

/**
 * How long a failed operation waits to learn whether its state is gone. NATS away answers nothing
 * (the check would wait out the client's 5 s timeout on every failed pull); no answer means not gone.
 */
const GONE_CHECK_MS = 1_000;

export interface RemakeWhenGoneOptions {
  /** What is made again, for the log line: "the subscription bucket". */
  readonly what: string;
  /** True when the stream (or consumer) an operation needs no longer exists; throws when NATS cannot tell. */
  readonly isGone: () => Promise<boolean>;
  /** Makes it again, as at start; must succeed when another replica makes it at the same moment. */
  readonly remake: () => Promise<void>;
  readonly logger: Logger;
}

/** Runs an operation on the hub's JetStream state, making that state again first if the operation found it gone. */
export type RemakingWhenGone = <T>(operation: () => Promise<T>) => Promise<T>;

/**
 * NATS can come back without its JetStream store (reinstalled, its volume lost, a stream deleted by
 * hand), and the hub's bucket and work queue go with it. A replica makes them at start; without this
 * it would fail every operation until restarted, while the read-side replicas follow the new store by
 * themselves. Only a failure whose cause is a missing stream remakes anything: while NATS is merely
 * away, `isGone` cannot answer and the operation's own error stands. Operations failing together
 * share one check and one remake. An operation that failed because the state was gone, and finds it
 * there again (remade meanwhile by this replica or another), runs again.
 */
export function remakingWhenGone({ what, isGone, remake, logger }: RemakeWhenGoneOptions): RemakingWhenGone {
  let checking: Promise<boolean> | null = null;
  let remaking: Promise<void> | null = null;
  // Counts finished remakes: an operation that failed while another one remade the state only runs again.
  let remakes = 0;
  const gone = (): Promise<boolean> =>
    (checking ??= answeredWithin(isGone(), GONE_CHECK_MS).finally(() => {
      checking = null;
    }));
  return async (operation) => {
    const remakesBefore = remakes;
    try {
      return await operation();
    } catch (error) {
      if (remaking === null && remakes === remakesBefore) {
        if (!(await gone())) {
          if (remakes === remakesBefore && !isNotFound(error)) throw error;
        } else if (remakes === remakesBefore) {
          remaking ??= (async () => {
            try {
              await remake();
              remakes++;
              logger.warn({ err: error }, `${what} was gone from NATS (a store lost or deleted); made it anew`);
            } finally {
              remaking = null;
            }
          })();
        }
      }
      await remaking;
      return operation();
    }
  };
}

/** The check's answer, or false when it fails or does not answer within `ms`. */
async function answeredWithin(check: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const unanswered = new Promise<boolean>((resolve) => {
    timer = setTimeout(resolve, ms, false);
  });
  try {
    return await Promise.race([check.catch(() => false), unanswered]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether what `lookup` (a stream's or consumer's info) asks about is missing; other errors (NATS away, a
 * timeout) are thrown, since they do not tell.
 */
export async function notFound(lookup: Promise<unknown>): Promise<boolean> {
  try {
    await lookup;
    return false;
  } catch (error) {
    if (isNotFound(error)) return true;
    throw error;
  }
}

/** A stream or consumer not found: with the state there now, it was remade since the operation failed. */
function isNotFound(error: unknown): boolean {
  return isApiError(error, JetStreamApiCodes.StreamNotFound) || isApiError(error, JetStreamApiCodes.ConsumerNotFound);
}

function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code;
}
