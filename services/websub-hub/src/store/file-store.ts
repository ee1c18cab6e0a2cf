import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { TopicName } from '@reviews/domain';
import type { Subscription, TopicState } from '../subscription.js';
import type { Change, SubscriptionStore } from './subscription-store.js';

interface FileContents {
  readonly subscriptions: Record<string, Subscription>;
  readonly topics: Partial<Record<TopicName, TopicState>>;
}

export const SUBSCRIPTIONS_FILE = 'websub-subscriptions.json';

/**
 * Durable store for the standalone process (no NATS): the whole state in one JSON file under
 * DATA_DIR, rewritten through a temporary file + fsync + rename, so a crash leaves either the old
 * file or the new one. Writes are serialised, which makes every `update` atomic.
 */
export async function openFileSubscriptionStore(dataDir: string): Promise<SubscriptionStore> {
  const path = join(dataDir, SUBSCRIPTIONS_FILE);
  let state: FileContents = await load(path);
  let queue: Promise<unknown> = Promise.resolve();

  const serialised = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => undefined);
    return next;
  };

  const persist = async (next: FileContents): Promise<void> => {
    // Created on the first write: a hub nobody subscribed to leaves no trace on disk.
    await mkdir(dataDir, { recursive: true });
    const temp = `${path}.${process.pid}.tmp`;
    const handle = await open(temp, 'w', 0o600);
    try {
      await handle.writeFile(JSON.stringify(next));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
    state = next;
  };

  /** One atomic read-change-write of an entry in one section of the file. */
  const updateEntry = <S extends keyof FileContents, T>(section: S, key: string, change: Change<T>): Promise<T | null> =>
    serialised(async () => {
      const entries = state[section] as Record<string, T>;
      const current = entries[key] ?? null;
      const next = change(current);
      if (next === undefined) return current;
      const updated = { ...entries };
      if (next === null) delete updated[key];
      else updated[key] = next;
      await persist({ ...state, [section]: updated });
      return next;
    });

  return {
    get: async (key) => state.subscriptions[key] ?? null,
    list: async () => Object.values(state.subscriptions),
    update: (key, change: Change<Subscription>) => updateEntry('subscriptions', key, change),
    topicState: async (topic) => state.topics[topic] ?? null,
    updateTopicState: (topic, change: Change<TopicState>) => updateEntry('topics', topic, change),
    close: () => serialised(async () => undefined),
  };
}

async function load(path: string): Promise<FileContents> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { subscriptions: {}, topics: {} };
    throw error;
  }
  const parsed = JSON.parse(text) as Partial<FileContents>;
  return { subscriptions: parsed.subscriptions ?? {}, topics: parsed.topics ?? {} };
}
