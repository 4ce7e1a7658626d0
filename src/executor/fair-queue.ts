/**
 * Waiting work per key (an organisation), served round-robin across keys: each key with work waiting holds one
 * place in the rotation, and a key that was served goes to the back. So a key's first item waits behind at most one
 * item of every other key that has work waiting, however long their backlogs are. Items of one key keep their order.
 */
export class FairQueue<T> {
  private readonly byKey = new Map<string, T[]>();
  /** Keys with work waiting, the next to serve first. */
  private readonly rotation: string[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  sizeOf(key: string): number {
    return this.byKey.get(key)?.length ?? 0;
  }

  push(key: string, item: T): void {
    const items = this.byKey.get(key);
    if (items) items.push(item);
    else {
      this.byKey.set(key, [item]);
      this.rotation.push(key);
    }
    this.count++;
  }

  /**
   * The next item of the first key in the rotation that `eligible` allows (a key skipped for now keeps its place),
   * or undefined when none may be served.
   */
  shift(eligible: (key: string) => boolean = () => true): { key: string; item: T } | undefined {
    const at = this.rotation.findIndex(eligible);
    if (at < 0) return undefined;
    const key = this.rotation[at];
    const items = this.byKey.get(key)!;
    const item = items.shift()!;
    this.count--;
    this.rotation.splice(at, 1);
    if (items.length) this.rotation.push(key);
    else this.byKey.delete(key);
    return { key, item };
  }

  /** Removes every waiting item (shutdown) and returns them. */
  drain(): T[] {
    const all = [...this.byKey.values()].flat();
    this.byKey.clear();
    this.rotation.length = 0;
    this.count = 0;
    return all;
  }
}
