import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import type { BackgroundJob, PassContext } from '../jobs/background-job';
import { BackgroundJobs } from '../jobs/background-jobs.service';
import type { JobLoop } from '../jobs/job-loop';
import { DeliverySlots } from './delivery-slots';
import { ClaimedDelivery, WebhookDeliveryClaims } from './webhook-delivery-claims';
import { WebhookDeliveryRecorder } from './webhook-delivery-recorder';
import { WebhookSender } from './webhook-sender';

interface FillResult {
  started: number;
  /** Every free slot was filled: there may be more due. */
  more: boolean;
}

/**
 * Delivers the outbox. A pass fills the free slots (`DeliverySlots`: WEBHOOK_DELIVERY_CONCURRENCY per replica,
 * one per subscription) with due deliveries (`WebhookDeliveryClaims`, leased: at most WEBHOOK_DELIVERY_PER_ORGANISATION
 * in flight per organisation, organisations served round-robin); each attempt POSTs outside any
 * transaction (`WebhookSender`) and is recorded in a second short transaction only while the lease is still ours
 * (`WebhookDeliveryRecorder`). The loop polls every WEBHOOK_POLL_INTERVAL_MS and is woken whenever an attempt frees
 * a slot; at shutdown it stops claiming and waits for the attempts in flight (recorded before the pool closes).
 */
@Injectable()
export class WebhookDeliveryWorker implements BackgroundJob<FillResult> {
  private readonly loop: JobLoop<FillResult>;
  private readonly slots: DeliverySlots;

  constructor(
    config: AppConfig,
    private readonly claims: WebhookDeliveryClaims,
    private readonly sender: WebhookSender,
    private readonly recorder: WebhookDeliveryRecorder,
    jobs: BackgroundJobs,
  ) {
    this.slots = new DeliverySlots(config.WEBHOOK_DELIVERY_CONCURRENCY);
    this.loop = jobs.register(this, { name: 'webhooks', logContext: 'Webhooks', everyMs: config.WEBHOOK_POLL_INTERVAL_MS, again: (r) => r.more });
  }

  /** Looks for due deliveries now (the poll timer does, and every attempt that frees a slot). */
  wake(): void {
    this.loop.wake();
  }

  /** Claims deliveries into the free slots and starts them. */
  async pass(ctx: PassContext): Promise<FillResult> {
    await this.claims.expireStale();
    const free = this.slots.free;
    if (free <= 0 || ctx.signal.aborted) return { started: 0, more: false };
    const rows = await this.claims.claim(free, this.slots.busySubscriptions());
    for (const row of rows) this.slots.start(row.subscription_id, () => this.deliver(row, ctx), () => this.loop.wake());
    return { started: rows.length, more: rows.length === free };
  }

  /** At shutdown, after the last pass: the attempts in flight are recorded before the pool closes. */
  settle(): Promise<void> {
    return this.slots.all();
  }

  /**
   * Delivers everything that is due now and waits until nothing is in flight (tests and benchmarks drive
   * the worker with this when the background loop is off). Returns the number of attempts made.
   */
  async drain(): Promise<number> {
    let attempts = 0;
    for (;;) {
      // A claim made while attempts were in flight may have left out their subscriptions: only a claim
      // made with nothing in flight that finds nothing means the outbox is drained.
      const idleBefore = this.slots.active === 0;
      const { started } = await this.loop.runPass();
      attempts += started;
      if (started === 0 && this.slots.active === 0) {
        if (idleBefore) return attempts;
        continue;
      }
      if (started === 0 || this.slots.free === 0) await this.slots.one();
    }
  }

  private async deliver(row: ClaimedDelivery, ctx: PassContext): Promise<void> {
    try {
      const outcome = await this.sender.attempt(row);
      await this.recorder.record(row, outcome);
    } catch (err) {
      ctx.error(err, { delivery: row.identity }, 'Webhook delivery could not be recorded');
    }
  }
}
