/**
 * A memo of computed answers, each valid under one state string (an index's structure record, say), bounded by
 * entries (keys are often request text) and bytes; least recently used go first, a value over a quarter of the byte
 * bound is not kept.
 */
export class BoundedMemo<V> {
  private readonly entries = new Map<string, { state: string; value: V; bytes: number }>();
  private bytes = 0;

  constructor(private readonly limits: { entries: number; bytes: number }) {}

  /** The value kept for `key` under `state` (now the most recently used), else undefined. */
  get(key: string, state: string): V | undefined {
    const e = this.entries.get(key);
    if (!e || e.state !== state) return undefined;
    this.entries.delete(key);
    this.entries.set(key, e);
    return e.value;
  }

  set({ key, state, value, valueBytes }: { key: string; state: string; value: V; valueBytes: number }): void {
    this.forget(key);
    // Two bytes a character (UTF-16) for the key and the state.
    const bytes = valueBytes + 2 * (key.length + state.length);
    if (bytes > this.limits.bytes / 4) return;
    this.entries.set(key, { state, value, bytes });
    this.bytes += bytes;
    for (const k of this.entries.keys()) {
      if (this.bytes <= this.limits.bytes && this.entries.size <= this.limits.entries) break;
      this.forget(k);
    }
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  private forget(key: string): void {
    const old = this.entries.get(key);
    if (!old) return;
    this.entries.delete(key);
    this.bytes -= old.bytes;
  }
}
