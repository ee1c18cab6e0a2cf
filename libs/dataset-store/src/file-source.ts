import { constants, watch, type FSWatcher, type Stats } from 'node:fs';
import { lstat, open, readlink, stat } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { contentHash } from '@reviews/domain';
import type { Logger, Registry } from '@reviews/runtime';
import { datasetLoadFailures, MAX_DATASET_BYTES, type DatasetSource, type OnDataset, type SourceHealth, type SourceRefusal } from './source.js';

export interface FileSourceOptions {
  readonly logger: Logger;
  /** The registry where the follower keeps dataset_load_failures_total, which counts the files refused here too, and its service label. */
  readonly metrics?: { readonly registry: Registry; readonly service: string };
  /** Quiet period after the last file-system event before the file is read again. */
  readonly debounceMs?: number;
  /** How often the file is checked while a directory it depends on cannot be watched. */
  readonly pollIntervalMs?: number;
}


/** A directory watch, and which directory it is: a directory removed and created again is another one. */
interface DirectoryWatch {
  readonly watcher: FSWatcher;
  readonly identity: string;
}

/** Longest a change to the file waits for its directories to fall quiet before it is read anyway ("within a second", README). */
const MAX_SETTLE_MS = 1000;

/** Symlinks followed at most, as the kernel does (MAXSYMLINKS); a longer chain is a loop. */
const MAX_LINKS = 40;

/** Why a file is refused before it is read (dataset_load_failures_total reasons). */
const FILE_REFUSAL_REASONS = ['not_regular_file', 'too_large', 'unreadable'] as const;
type FileRefusalReason = (typeof FILE_REFUSAL_REASONS)[number];

/**
 * The embedded dataset source of the standalone service: one JSON file, watched for changes.
 * Directories are watched, not the file, so editors that save by writing a temporary file and
 * renaming it over the original (a new inode) and Kubernetes ConfigMap symlink swaps are seen: the
 * file's directory, and the directory of every link on the way when the path is a symlink (a write
 * to the target happens there). While one of them cannot be watched (missing, removed) the file
 * is polled, and watched again once the directory is back. A dataset's version is the hash of
 * the file's bytes (identical bytes, no delivery); its publish time is when the file was saved
 * in place, its ctime (a write or a rename sets it), not its mtime, which `cp -p`, `rsync -t`, `tar`
 * or `touch -d` set to any date: 27 years of "propagation", or a dataset published in the future.
 */
export class FileDatasetSource implements DatasetSource {
  readonly #path: string;
  readonly #logger: Logger;
  readonly #debounceMs: number;
  readonly #pollIntervalMs: number;
  readonly #watches = new Map<string, DirectoryWatch>();
  /** The directory that could not be watched, and why, while polling; null while every one is watched. */
  #unwatched: { directory: string; reason: string } | null = null;
  #pollTimer: NodeJS.Timeout | null = null;
  /** What the last read saw of the file (identity, size, times, or why it could not): polling reads again only when it changes. */
  #lastSeen: string | null = null;
  #timer: NodeJS.Timeout | null = null;
  /** When the file is read at the latest, however busy its directories stay (null when no event waits). */
  #readBy: number | null = null;
  /** The names the path resolves through (itself, then each link's target): events about them are the file's own. */
  #names = new Set<string>();
  /** The path, then each link it leads through, as it was last resolved: what a file that cannot be read is, as saved. */
  #way: readonly string[] = [];
  #lastVersion: string | null = null;
  #health: SourceHealth = { connected: false, detail: 'not started' };
  #lastRefusal: SourceRefusal | null = null;
  /**
   * The file as it was when last refused: a refusal stands until the file is saved again, so every
   * other event in its directories (a log written beside it) does not refuse and count it again.
   */
  #refused: string | null = null;
  readonly #metrics: FileSourceOptions['metrics'];
  /** Watching and deliveries run one after another, in file order. */
  #chain: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(path: string, options: FileSourceOptions) {
    this.#path = resolve(path);
    this.#logger = options.logger;
    this.#debounceMs = options.debounceMs ?? 100;
    this.#pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.#metrics = options.metrics;
  }

  async subscribe(onDataset: OnDataset): Promise<void> {
    // Its series start at 0, so that an alert on their increase sees a pod's first refusal.
    for (const reason of FILE_REFUSAL_REASONS) this.#countRefusal(reason, 0);
    await this.#enqueue(() => this.#sync(onDataset));
  }

  health(): SourceHealth {
    return this.#lastRefusal ? { ...this.#health, lastRefusal: this.#lastRefusal } : this.#health;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#pollTimer) clearTimeout(this.#pollTimer);
    // A step under way may still set up a watch: close them once it is done.
    await this.#chain;
    for (const { watcher } of this.#watches.values()) watcher.close();
    this.#watches.clear();
  }

  /**
   * Reads once the directories have been quiet for the debounce, or MAX_SETTLE_MS after the file's
   * own last event even if other files keep changing: a log written beside the file every 50 ms (the
   * cache audit) held a renamed-in dataset back for as long as the writing went on. Events about the
   * file itself (or of unknown name) still wait for quiet, so a file written in place over seconds is
   * not read half-written.
   */
  #schedule(onDataset: OnDataset, aboutTheFile = true): void {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    const now = Date.now();
    if (aboutTheFile || this.#readBy === null) this.#readBy = now + MAX_SETTLE_MS;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#readBy = null;
      void this.#enqueue(() => this.#sync(onDataset));
    }, Math.max(0, Math.min(this.#debounceMs, this.#readBy - now)));
  }

  #enqueue(step: () => Promise<void>): Promise<void> {
    this.#chain = this.#chain.then(() => (this.#closed ? undefined : step()));
    return this.#chain;
  }

  /** Watch what is to be watched now (an event may mean a directory went or a link moved), then read. */
  async #sync(onDataset: OnDataset): Promise<void> {
    await this.#watchDirectories(onDataset);
    await this.#readAndDeliver(onDataset);
  }

  /** Looks after the directories are watched again, if they can be, so a save between the two is not missed. */
  async #poll(onDataset: OnDataset): Promise<void> {
    await this.#watchDirectories(onDataset);
    if ((await this.#look()) !== this.#lastSeen) await this.#readAndDeliver(onDataset);
  }

  /**
   * Brings the watches in line with the directories the path depends on now, and polls while one
   * of them cannot be watched.
   */
  async #watchDirectories(onDataset: OnDataset): Promise<void> {
    const { directories: wanted, names, way } = await chainOf(this.#path);
    this.#names = names;
    this.#way = way;
    for (const [directory, { watcher }] of this.#watches) {
      if (wanted.includes(directory)) continue;
      watcher.close();
      this.#watches.delete(directory);
    }
    let unwatched: { directory: string; reason: string } | null = null;
    for (const directory of wanted) {
      const current = this.#watches.get(directory);
      let identity: string;
      try {
        const info = await stat(directory);
        identity = `${info.dev}:${info.ino}`;
        if (current?.identity === identity) continue;
      } catch (error) {
        unwatched ??= { directory, reason: errorCode(error) };
        current?.watcher.close();
        this.#watches.delete(directory);
        continue;
      }
      current?.watcher.close();
      this.#watches.delete(directory);
      try {
        const watcher = watch(directory, { persistent: false }, (_event, name) => this.#schedule(onDataset, name === null || this.#names.has(name)));
        // A watch that fails later is dropped; the next look sets it up again or polls.
        watcher.on('error', (error) => {
          this.#logger.warn({ err: error, directory }, 'watching the dataset directory failed');
          if (this.#watches.get(directory)?.watcher === watcher) this.#watches.delete(directory);
          watcher.close();
          this.#schedule(onDataset);
        });
        this.#watches.set(directory, { watcher, identity });
      } catch (error) {
        unwatched ??= { directory, reason: errorCode(error) };
      }
    }
    this.#setPolling(unwatched, onDataset);
  }

  #setPolling(unwatched: { directory: string; reason: string } | null, onDataset: OnDataset): void {
    if (unwatched && !this.#unwatched) {
      this.#logger.warn({ file: this.#path, directory: unwatched.directory, reason: unwatched.reason }, `cannot watch the dataset directory; polling the file every ${this.#pollIntervalMs} ms until it can`);
    } else if (!unwatched && this.#unwatched) {
      this.#logger.info({ file: this.#path }, 'watching the dataset file again');
    }
    this.#unwatched = unwatched;
    if (!unwatched && this.#pollTimer) {
      clearTimeout(this.#pollTimer);
      this.#pollTimer = null;
    }
    if (!unwatched || this.#pollTimer || this.#closed) return;
    // One look at a time: the next is armed by this one's #watchDirectories, while still needed.
    this.#pollTimer = setTimeout(() => {
      this.#pollTimer = null;
      void this.#enqueue(() => this.#poll(onDataset));
    }, this.#pollIntervalMs);
    // Like the watches, polling does not keep the process alive.
    this.#pollTimer.unref();
  }

  /** The file as `stat` sees it (following links), or why it cannot be seen: a change means a read is due. */
  async #look(): Promise<string> {
    try {
      return appearance(await stat(this.#path));
    } catch (error) {
      return errorCode(error);
    }
  }

  #watchingDetail(): string {
    return this.#unwatched ? `polling ${this.#path} every ${this.#pollIntervalMs} ms (cannot watch ${this.#unwatched.directory}: ${this.#unwatched.reason})` : `watching ${this.#path}`;
  }

  /**
   * The file that cannot be read as saved: each link on the way to it and where the way ends, as `lstat`
   * sees them, since `stat` cannot follow it. A ConfigMap's swap replaces a link midway, so it is a new save.
   */
  async #wayAppearance(): Promise<string> {
    const seen = await Promise.all(this.#way.map((step) => lstat(step).then(appearance, errorCode)));
    return seen.join(' > ');
  }

  /** `seen` is the file as refused; the same file seen again is not refused again. */
  #refuse(reason: FileRefusalReason, problem: string, seen: string): void {
    if (seen === this.#refused) return;
    this.#refused = seen;
    this.#logger.error({ file: this.#path, reason }, `dataset file refused, keeping the current dataset: ${problem}`);
    this.#lastRefusal = { at: performance.now(), summary: `dataset file refused (${reason}): ${this.#path}: ${problem}` };
    this.#countRefusal(reason, 1);
  }

  #countRefusal(reason: FileRefusalReason, by: number): void {
    if (this.#metrics) datasetLoadFailures(this.#metrics.registry)?.inc({ service: this.#metrics.service, reason }, by);
  }

  async #readAndDeliver(onDataset: OnDataset): Promise<void> {
    if (this.#closed) return;
    let bytes: Buffer;
    let publishedAt: Date;
    try {
      // Non-blocking, so a named pipe opens at once (and is refused below) instead of holding the read until a writer comes.
      const handle = await open(this.#path, constants.O_RDONLY | constants.O_NONBLOCK);
      try {
        const info = await handle.stat();
        this.#lastSeen = appearance(info);
        // The path opens: what is wrong now is what it holds, not how the source reaches it.
        this.#health = { connected: true, detail: this.#watchingDetail() };
        const refusal = datasetFileRefusal(info);
        if (refusal) {
          this.#refuse(refusal.reason, refusal.problem, this.#lastSeen);
          return;
        }
        bytes = await handle.readFile();
        publishedAt = new Date(info.ctimeMs);
        this.#lastRefusal = null;
        this.#refused = null;
      } finally {
        await handle.close();
      }
    } catch (error) {
      const code = errorCode(error);
      this.#lastSeen = code;
      const detail = `cannot read ${this.#path}: ${code}`;
      // Mid-rename the file can be briefly absent; the next directory event (or look) reads it again. Any other
      // failure (permissions, a symlink loop) stays until the file is saved again: a refused publish.
      if (code !== 'ENOENT') this.#refuse('unreadable', `it cannot be read (${code}); check its permissions and, for a symlink, where it leads`, `${code}:${await this.#wayAppearance()}`);
      else if (this.#health.detail !== detail) this.#logger.warn({ file: this.#path }, detail);
      this.#health = { connected: false, detail };
      return;
    }
    const version = contentHash(bytes);
    if (version === this.#lastVersion || this.#closed) return;
    this.#lastVersion = version;
    try {
      await onDataset({ version, publishedAt, bytes, canonical: false, traceparent: null });
    } catch (error) {
      this.#logger.error({ err: error, file: this.#path }, 'dataset delivery failed');
    }
  }
}

/**
 * A device (`/dev/zero` behind a symlink), a named pipe or a directory is no dataset file: read, the
 * first grew memory without bound and the second blocked every later load. A file larger than the
 * NATS store takes is refused before it is read.
 */
export function datasetFileRefusal(info: Stats): { reason: FileRefusalReason; problem: string } | null {
  if (!info.isFile()) return { reason: 'not_regular_file', problem: `it is ${kindOf(info)}, not a regular file; save the dataset as a file (write beside it, then rename)` };
  if (info.size > MAX_DATASET_BYTES) return { reason: 'too_large', problem: `it holds ${info.size} bytes; a dataset may have at most ${MAX_DATASET_BYTES}` };
  return null;
}

function kindOf(info: Stats): string {
  if (info.isFIFO()) return 'a named pipe';
  if (info.isCharacterDevice() || info.isBlockDevice()) return 'a device';
  if (info.isDirectory()) return 'a directory';
  if (info.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** Which file it is and when it last changed: a save changes it (a rename, the size or the times). */
function appearance(info: Stats): string {
  return `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}

/**
 * The directories whose entries decide what `path` is: its own, and when it is a symlink, the
 * directory of each link it leads through and of the file it ends at (ConfigMaps chain two); the
 * names of those entries; and the way itself, `path` and each path a link leads to.
 */
async function chainOf(path: string): Promise<{ directories: string[]; names: Set<string>; way: string[] }> {
  const directories = [dirname(path)];
  const names = new Set([basename(path)]);
  const way = [path];
  let current = path;
  for (let links = 0; links < MAX_LINKS; links++) {
    try {
      current = resolve(dirname(current), await readlink(current));
    } catch {
      break; // not a link (EINVAL), or missing: `current` is where the chain ends
    }
    if (way.includes(current)) break; // a loop: the rest of it adds nothing
    if (!directories.includes(dirname(current))) directories.push(dirname(current));
    names.add(basename(current));
    way.push(current);
  }
  return { directories, names, way };
}
