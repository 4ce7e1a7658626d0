/**
 * Gap before retry n (after the n-th failed attempt), in seconds: 5 s, 1 min, 5 min, 30 min, 2 h, 5 h, 10 h.
 * With the first attempt that makes at most 8 attempts over about 18 h (21 h with the largest jitter); after
 * the 8th, or when a retry would fall more than DELIVERY_WINDOW_MS after the delivery was queued, it is FAILED.
 */
export const RETRY_DELAYS_SECONDS = [5, 60, 300, 1800, 7200, 18000, 36000];
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** Deliveries are retried for up to 24 h after the event. */
export const DELIVERY_WINDOW_MS = 24 * 3600_000;
/** A subscription whose deliveries have failed without a success in between for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 3 * 24 * 3600_000;
/** Each gap is spread by +-20 % so retries of many deliveries do not arrive together. */
export const RETRY_JITTER = 0.2;

/** Gap after the `attempts`-th failed attempt, with jitter (`random` in [0, 1)). */
export function retryDelayMs(attempts: number, random: number = Math.random()): number {
  const base = RETRY_DELAYS_SECONDS[Math.min(Math.max(attempts, 1), RETRY_DELAYS_SECONDS.length) - 1] * 1000;
  return Math.round(base * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random));
}
