import { FairQueue } from '../../src/executor/fair-queue';

describe('FairQueue', () => {
  it("serves keys round-robin: one key's backlog does not delay another key's first item", () => {
    const q = new FairQueue<string>();
    for (let i = 0; i < 100; i++) q.push('a', `a${i}`);
    q.push('b', 'b0');
    q.push('c', 'c0');
    q.push('b', 'b1');
    const order = Array.from({ length: 7 }, () => q.shift()!.item);
    expect(order).toEqual(['a0', 'b0', 'c0', 'a1', 'b1', 'a2', 'a3']);
    expect(q.size).toBe(96);
    expect(q.sizeOf('a')).toBe(96);
    expect(q.sizeOf('b')).toBe(0);
  });

  it('keeps the place of a key that may not be served now, and keeps each key in order', () => {
    const q = new FairQueue<string>();
    q.push('a', 'a0');
    q.push('a', 'a1');
    q.push('b', 'b0');
    q.push('b', 'b1');
    expect(q.shift((k) => k !== 'a')!.item).toBe('b0');
    // `a` was skipped, not sent to the back: it is next once eligible.
    expect(q.shift()!.item).toBe('a0');
    expect(q.shift()!.item).toBe('b1');
    expect(q.shift()!.item).toBe('a1');
    expect(q.shift()).toBeUndefined();
    expect(q.shift((k) => k === 'none')).toBeUndefined();
  });

  it('drains everything waiting', () => {
    const q = new FairQueue<number>();
    q.push('a', 1);
    q.push('b', 2);
    expect(q.drain().sort()).toEqual([1, 2]);
    expect(q.size).toBe(0);
    expect(q.shift()).toBeUndefined();
  });
});
