import { watch, type FSWatcher } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { contentHash } from '@reviews/domain';
import type { Logger } from '@reviews/runtime';
import type { DatasetSource, PublishedDataset, SourceHealth } from './source.js';

export interface FileSourceOptions {
  readonly logger: Logger;
  /** Quiet period after the last file-system event before the file is read again. */
  readonly debounceMs?: number;
}

/**
 * The embedded dataset source of the standalone service: one JSON file, watched for changes.
 * The directory is watched, not the file, so editors that save by writing a temporary file and
 * renaming it over the original (a new inode) and Kubernetes ConfigMap symlink swaps are seen.
 * A dataset's version is the hash of the file's bytes (identical bytes, no delivery); its publish
 * time is the file's mtime.
 */
export class FileDatasetSource implements DatasetSource {
  readonly #path: string;
  readonly #logger: Logger;
  readonly #debounceMs: number;
  #watcher: FSWatcher | null = null;
  #timer: NodeJS.Timeout | null = null;
  #lastVersion: string | null = null;
  #health: SourceHealth = { connected: false, detail: 'not started' };
  /** Deliveries run one after another, in file order. */
  #chain: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(path: string, options: FileSourceOptions) {
    this.#path = resolve(path);
    this.#logger = options.logger;
    this.#debounceMs = options.debounceMs ?? 100;
  }

  async subscribe(onDataset: (dataset: PublishedDataset) => Promise<void> | void): Promise<void> {
    const directory = dirname(this.#path);
    const watchFailed = (error: Error) => {
      this.#logger.error({ err: error, file: this.#path }, 'cannot watch the dataset directory; changes will not be picked up');
    };
    try {
      this.#watcher = watch(directory, { persistent: false }, () => this.#schedule(onDataset));
      this.#watcher.on('error', watchFailed);
    } catch (error) {
      // A missing directory is reported (health, logs), never a crash: the process stays up, not ready.
      watchFailed(error as Error);
    }
    await this.#enqueue(onDataset);
  }

  health(): SourceHealth {
    return this.#health;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#watcher?.close();
    await this.#chain;
  }

  #schedule(onDataset: (dataset: PublishedDataset) => Promise<void> | void): void {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#enqueue(onDataset);
    }, this.#debounceMs);
  }

  #enqueue(onDataset: (dataset: PublishedDataset) => Promise<void> | void): Promise<void> {
    this.#chain = this.#chain.then(() => this.#readAndDeliver(onDataset));
    return this.#chain;
  }

  async #readAndDeliver(onDataset: (dataset: PublishedDataset) => Promise<void> | void): Promise<void> {
    if (this.#closed) return;
    let bytes: Buffer;
    let publishedAt: Date;
    try {
      const info = await stat(this.#path);
      bytes = await readFile(this.#path);
      publishedAt = new Date(info.mtimeMs);
    } catch (error) {
      // Mid-rename the file can be briefly absent; the next directory event reads it again.
      const detail = `cannot read ${this.#path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`;
      if (this.#health.detail !== detail) this.#logger.warn({ file: this.#path }, detail);
      this.#health = { connected: false, detail };
      return;
    }
    this.#health = { connected: true, detail: `watching ${this.#path}` };
    const version = contentHash(bytes).slice(0, 32);
    if (version === this.#lastVersion || this.#closed) return;
    this.#lastVersion = version;
    try {
      await onDataset({ version, publishedAt, bytes, canonical: false, traceparent: null });
    } catch (error) {
      this.#logger.error({ err: error, file: this.#path }, 'dataset delivery failed');
    }
  }
}
