/** Least-recently-used map bounded by entry count and by total size, so no query pattern can exhaust memory. */
export class BoundedLru<V> {
  readonly #entries = new Map<string, { value: V; size: number }>();
  #bytes = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V): void {
    const size = this.sizeOf(value);
    const old = this.#entries.get(key);
    if (old) {
      this.#entries.delete(key);
      this.#bytes -= old.size;
    }
    if (size > this.maxBytes) return;
    this.#entries.set(key, { value, size });
    this.#bytes += size;
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.size;
    }
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.size;
  }

  get size(): number {
    return this.#entries.size;
  }
}
