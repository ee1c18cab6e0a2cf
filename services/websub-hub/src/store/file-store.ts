import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { TopicName } from '@reviews/domain';
import { isSubscription, type SubscriptionRecord, type TopicState } from '../subscription.js';
import { changeOfSubscription, subscriptionIn, type Change, type SubscriptionStore } from './subscription-store.js';

interface FileContents {
  readonly subscriptions: Record<string, SubscriptionRecord>;
  readonly topics: Partial<Record<TopicName, TopicState>>;
}

/** One `update` waiting for the file: its change made to the batch's draft, and its caller told how that went. */
interface PendingWrite {
  apply(draft: Draft): void;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * The state a batch of updates makes: a section is copied once, at its first change in the batch, and
 * changed in place after. A copy per update made a fan-out to n subscribers cost n² entry copies.
 */
class Draft {
  readonly #copies: { [S in keyof FileContents]?: FileContents[S] } = {};

  constructor(private readonly base: FileContents) {}

  read<S extends keyof FileContents>(section: S): FileContents[S] {
    return this.#copies[section] ?? this.base[section];
  }

  edit<S extends keyof FileContents>(section: S): FileContents[S] {
    return (this.#copies[section] ??= { ...this.base[section] });
  }

  /** The state after the batch, or the base itself when nothing changed. */
  result(): FileContents {
    return Object.keys(this.#copies).length === 0 ? this.base : { ...this.base, ...this.#copies };
  }
}

export const SUBSCRIPTIONS_FILE = 'websub-subscriptions.json';

/**
 * Durable store for the standalone process (no NATS): the whole state in one JSON file under
 * DATA_DIR, rewritten through a temporary file + fsync + rename, so a crash leaves either the old
 * file or the new one. Changes are applied one after another, which makes every `update` atomic,
 * and those that arrive while a write is under way go to disk together in the next one (group
 * commit): a fan-out records every subscriber's outcome, and one fsync each, in line, let a slow
 * disk hold the last notification back by the sum of them. An `update` resolves only once the file
 * holds its change; reads see only what the file holds.
 */
export async function openFileSubscriptionStore(dataDir: string): Promise<SubscriptionStore> {
  const path = join(dataDir, SUBSCRIPTIONS_FILE);
  let state: FileContents = await load(path);
  let waiting: PendingWrite[] = [];
  let writing: Promise<void> | null = null;

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
  };

  const writeWaiting = async (): Promise<void> => {
    // Updates made in the same tick as the first one join its write.
    await Promise.resolve();
    while (waiting.length > 0) {
      const batch = waiting;
      waiting = [];
      const draft = new Draft(state);
      const applied: PendingWrite[] = [];
      for (const write of batch) {
        try {
          write.apply(draft);
          applied.push(write);
        } catch (error) {
          write.reject(error);
        }
      }
      const next = draft.result();
      try {
        if (next !== state) await persist(next);
        state = next;
        for (const write of applied) write.resolve();
      } catch (error) {
        // Nothing of this batch reached the file: every caller in it is told, and the state stays as it was.
        for (const write of applied) write.reject(error);
      }
    }
    // Cleared in the same step that found nothing waiting, so an update made after it starts a new writer.
    writing = null;
  };

  /** One atomic read-change-write of an entry in one section of the file. */
  const updateEntry = <S extends keyof FileContents, T>(section: S, key: string, change: Change<T>): Promise<T | null> =>
    new Promise((resolve, reject) => {
      let result: T | null = null;
      waiting.push({
        apply: (draft) => {
          const before = (draft.read(section) as Record<string, T>)[key] ?? null;
          // A change that throws leaves the draft as it was: it throws before anything is edited.
          const after = change(before);
          result = after === undefined ? before : after;
          if (after === undefined) return;
          const entries = draft.edit(section) as Record<string, T>;
          if (after === null) delete entries[key];
          else entries[key] = after;
        },
        resolve: () => resolve(result),
        reject,
      });
      writing ??= writeWaiting();
    });

  return {
    get: async (key) => subscriptionIn(state.subscriptions[key] ?? null),
    list: async () => Object.values(state.subscriptions).filter(isSubscription),
    update: async (key, change) => subscriptionIn(await updateEntry('subscriptions', key, changeOfSubscription(change))),
    listRecords: async () => Object.values(state.subscriptions),
    updateRecord: (key, change: Change<SubscriptionRecord>) => updateEntry('subscriptions', key, change),
    topicState: async (topic) => state.topics[topic] ?? null,
    updateTopicState: (topic, change: Change<TopicState>) => updateEntry('topics', topic, change),
    close: async () => {
      while (writing) await writing;
    },
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
