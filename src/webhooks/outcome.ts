import type { AttemptResult, ClaimedDelivery } from '../domain/webhook.js';
import type { SendResult } from './sender.js';

/** Retry delays are lengthened by up to this fraction, so that failures at one moment do not retry in step. */
const JITTER = 0.1;

/** An attempt's result waiting to be recorded, and when its retry is due (epoch ms), counted from its end. */
export interface Finished {
  readonly result: Omit<AttemptResult, 'retryInMs'>;
  readonly retryAt: number | null;
}

/**
 * How an attempt that ended `now` (epoch ms) came out, by WEBHOOK_RETRY_SCHEDULE (`schedule`). The retry's
 * due time is counted from the attempt's end, not from when its result is recorded: results wait for
 * their batch and for the recordings before them, which under load (a slow store, a busy machine) took
 * long enough to put the retry that much later again.
 */
export function outcomeOf(delivery: ClaimedDelivery, { status, error, forbidden }: SendResult, at: Date, schedule: readonly number[], now: number): Finished {
  if (status !== null && status >= 200 && status < 300 && error === null) {
    return { result: { delivery, outcome: 'delivered', status, error: null, at }, retryAt: null };
  }
  if (status === 410) return { result: { delivery, outcome: 'gone', status, error, at }, retryAt: null };
  // A destination refused as private is refused again on every retry: the event fails now.
  if (forbidden) return { result: { delivery, outcome: 'failed', status, error, at }, retryAt: null };
  // Counted from the attempts made before the event was last queued again (resend, recover).
  const delay = schedule[delivery.attempt - delivery.roundStart - 1];
  if (delay === undefined) return { result: { delivery, outcome: 'failed', status, error, at }, retryAt: null };
  const retryAt = now + Math.round(delay * (1 + Math.random() * JITTER));
  return { result: { delivery, outcome: 'retry', status, error, at }, retryAt };
}

/** The result as the store records it at `now`: the retry's delay is what is left of it then. */
export function toRecord({ result, retryAt }: Finished, now: number): AttemptResult {
  return { ...result, retryInMs: retryAt === null ? null : Math.max(0, retryAt - now) };
}
