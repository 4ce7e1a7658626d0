/**
 * The delivery attempts one replica has in flight: at most `capacity` at once and at most one per subscription,
 * so a slow receiver holds one slot and cannot starve the others, and a healthy subscription receives its events
 * in order. Claims leave out `busySubscriptions()`. The limits over all replicas (one per subscription, and
 * WEBHOOK_DELIVERY_PER_ORGANISATION per organisation) are counted from the leases by `WebhookDeliveryClaims`.
 */
export class DeliverySlots {
  private readonly perSubscription = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly capacity: number) {}

  get active(): number {
    return this.inFlight.size;
  }

  get free(): number {
    return Math.max(0, this.capacity - this.inFlight.size);
  }

  busySubscriptions(): string[] {
    return [...this.perSubscription.keys()];
  }

  /** Runs `attempt` (which must not reject) in a slot; `freed` is called once the slot is free again. */
  start(subscriptionId: string, attempt: () => Promise<void>, freed: () => void): void {
    this.perSubscription.set(subscriptionId, (this.perSubscription.get(subscriptionId) ?? 0) + 1);
    const p: Promise<void> = attempt().finally(() => {
      const n = (this.perSubscription.get(subscriptionId) ?? 1) - 1;
      if (n <= 0) this.perSubscription.delete(subscriptionId);
      else this.perSubscription.set(subscriptionId, n);
      this.inFlight.delete(p);
      freed();
    });
    this.inFlight.add(p);
  }

  /** Settles when one attempt in flight has finished. */
  async one(): Promise<void> {
    await Promise.race(this.inFlight);
  }

  /** Settles when every attempt in flight has finished. */
  async all(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }
}
