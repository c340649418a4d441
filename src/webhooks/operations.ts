import { durationPattern, parseDuration } from '../domain/duration.js';
import { MAX_SECRET_OVERLAP_MS, newWebhookSecret, type WebhookChange, type WebhookEndpoint } from '../domain/webhook.js';
import type { Store } from '../store/store.js';
import { descriptionProblem, endpointUrlProblem, WebhookRequestError } from './register.js';

/** Without an `overlap`, a rotated secret keeps signing for a day: receivers update their key meanwhile. */
export const DEFAULT_SECRET_OVERLAP = '24h';

/** Days each month has: 31, 30, 28; and 29 in February of a leap year (every 4th, not every 100th unless every 400th). */
const MONTH_DAY =
  '(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))';
const LEAP_YEAR = '(?:\\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)';

/**
 * An RFC 3339 date-time (section 5.6): a full date, `T`, a time with optional fractions of a second, and
 * `Z` or an offset; either letter in either case. The pattern spells out the calendar (no month 00 or 13,
 * no February 30, February 29 in leap years only) and the clock (hours to 23, minutes and seconds to 59:
 * no leap second, which JavaScript's Date cannot hold; offsets to 23:59), so that a schema says which
 * texts are times exactly as parseRfc3339 reads them.
 */
export const RFC3339 =
  `^(?:\\d{4}-${MONTH_DAY}|${LEAP_YEAR}-02-29)[Tt](?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?(?:[Zz]|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)$`;
const RFC3339_FORM = new RegExp(RFC3339);

/**
 * An overlap as written: a duration (domain/duration.ts) of at most 7 days, its bound spelt out in each
 * unit, so that the schema refuses what parseOverlap does (8d, 169h).
 */
export const OVERLAP = durationPattern(MAX_SECRET_OVERLAP_MS);

/** A duration of at most 7 days (0, 0s and 0m alike), in milliseconds; null when it is not one. */
export function parseOverlap(text: string): number | null {
  const ms = parseDuration(text);
  return ms === null || ms > MAX_SECRET_OVERLAP_MS ? null : ms;
}

export const OVERLAP_RULE = 'must be 0 or a duration such as 90s, 15m, 24h or 7d, at most 7d (604800s, 10080m, 168h)';

/** The time an RFC 3339 text names, or null when it is not one (month 13, day 32, February 30). */
export function parseRfc3339(text: string): Date | null {
  if (!RFC3339_FORM.test(text)) return null;
  const ms = Date.parse(text.toUpperCase());
  if (Number.isNaN(ms)) return null;
  // Date.parse rolls 2025-02-30 over to March: the date part must read back as written.
  const offset = /([+-])(\d{2}):(\d{2})$/.exec(text);
  const shift = offset ? (offset[1] === '-' ? -1 : 1) * (Number(offset[2]) * 60 + Number(offset[3])) * 60_000 : 0;
  return new Date(ms + shift).toISOString().slice(0, 10) === text.slice(0, 10) ? new Date(ms) : null;
}

export const SINCE_RULE = 'must be an RFC 3339 date-time, such as 2025-01-31T09:00:00Z';

export interface UpdateRequest {
  readonly url?: string | undefined;
  readonly description?: string | undefined;
  readonly enabled?: boolean | undefined;
}

/**
 * PATCH /webhooks/{id} and `webhook update`: checks a new URL as registration does (SSRF rules
 * included) and a new description, then changes the endpoint. `by` names who disables it by hand, for its
 * reason. Null when the caller has no such endpoint.
 */
export async function updateWebhook(
  store: Store, id: string, user: string | null, request: UpdateRequest, by: string, allowPrivate: boolean,
): Promise<WebhookEndpoint | null> {
  if (request.url !== undefined) {
    const problem = endpointUrlProblem(request.url, allowPrivate);
    if (problem) throw new WebhookRequestError(problem.privateAddress ? 'private' : 'invalid', `url ${problem.reason}`);
  }
  const problem = request.description === undefined ? null : descriptionProblem(request.description);
  if (problem) throw new WebhookRequestError('invalid', `description ${problem}`);
  const change: WebhookChange = {
    url: request.url,
    description: request.description,
    enable: request.enabled === true ? true : undefined,
    disable: request.enabled === false ? `disabled by ${by}` : undefined,
  };
  return store.webhooks.updateWebhook(id, user, change);
}

/** A new secret for the endpoint; the one it replaces signs too for `overlapMs`. Null when there is no such endpoint. */
export async function rotateWebhookSecret(
  store: Store, id: string, user: string | null, overlapMs: number,
): Promise<{ secret: string; previousSecretExpiresAt: Date } | null> {
  const secret = newWebhookSecret();
  const rotated = await store.webhooks.rotateWebhookSecret(id, user, secret, overlapMs);
  return rotated === null ? null : { secret, previousSecretExpiresAt: rotated.previousSecretExpiresAt };
}
