import { DRIVER_ERROR_CLASSES, type DriverError } from './driver-contract';

/**
 * A driver call that did not answer an observation: thrown by ClusterDriver implementations. `driverError` is the
 * driver's own error (passed through as it answered it) or one of the HTTP driver's: `DriverUnreachable`,
 * `DriverTimeout`, `DriverUnavailable` (a 5xx, 429 or 408 without a DriverError body), `DriverBackingOff` (calls held
 * back after failures), `DriverAuthenticationFailed` (the driver refused the signature: the secret differs),
 * `DriverProtocolError` (an answer that is not the protocol's, or a redirect) are retryable; `DriverRejectedRequest` (another 4xx)
 * is terminal. The message never holds a request body, so never credentials.
 */
export class DriverCallError extends Error {
  constructor(readonly driverError: DriverError) {
    super(driverError.message);
    this.name = 'DriverCallError';
  }

  get retryable(): boolean {
    return this.driverError.class === 'retryable';
  }

  static retryable(code: string, message: string): DriverCallError {
    return new DriverCallError({ class: 'retryable', code, message });
  }

  static terminal(code: string, message: string): DriverCallError {
    return new DriverCallError({ class: 'terminal', code, message });
  }
}

/** The error of any throw from a driver call: a DriverCallError's own, anything else as a retryable `DriverFailure`. */
export function driverErrorOf(e: unknown): DriverError {
  if (e instanceof DriverCallError) return e.driverError;
  return { class: 'retryable', code: 'DriverFailure', message: 'The cluster driver failed unexpectedly' };
}

const MAX_CODE = 100;
const MAX_MESSAGE = 2000;

/** A DriverError as a driver may send it (class, code, message strings within bounds), or null. */
export function parseDriverError(value: unknown): DriverError | null {
  if (!value || typeof value !== 'object') return null;
  const v = value as Record<string, unknown>;
  if (!(DRIVER_ERROR_CLASSES as readonly unknown[]).includes(v.class)) return null;
  if (typeof v.code !== 'string' || !v.code || typeof v.message !== 'string') return null;
  return { class: v.class as DriverError['class'], code: v.code.slice(0, MAX_CODE), message: v.message.slice(0, MAX_MESSAGE) };
}
