import type {
  AttemptResult, ClaimedDelivery, DeliveryAttempt, DeliveryState, WebhookEndpoint,
} from '../../domain/webhook.js';
import { listedAllUsers } from './all-users.js';
import { param, render, sql, type Dialect, type Sql } from './dialect.js';

/**
 * What both backends share of the webhook tables: the columns an endpoint is listed with, and the
 * mapping of endpoint, attempt and claim rows, written once; each backend keeps its statements'
 * shapes (its locks, its batching) in its own webhooks file.
 */

/** Why an endpoint was disabled when its receiver answered 410 (the same text on every backend). */
export const GONE_REASON = 'the receiver answered 410 Gone';

/** The event's state after an attempt with this outcome (as webhook_attempts.state records it). */
export function stateAfter(outcome: AttemptResult['outcome']): DeliveryState {
  return outcome === 'delivered' ? 'delivered' : outcome === 'retry' ? 'pending' : 'failed';
}

/**
 * The columns of an endpoint as listed: never the secret (only claims need it), and all_users while the
 * endpoint receives every user's plants (see all-users.ts), now (the dialect's `now`).
 */
export function endpointColumns(d: Dialect): Sql {
  return sql`id, username, ${listedAllUsers(d, 'webhook_endpoints')}, url, description, created_at, disabled_at,
  disabled_reason`;
}

export interface EndpointRow {
  readonly id: string;
  readonly username: string;
  readonly all_users: unknown;
  readonly url: string;
  readonly description: string | null;
  readonly created_at: unknown;
  readonly disabled_at: unknown;
  readonly disabled_reason: string | null;
}

export function endpointOf(d: Dialect, row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    user: row.username,
    allUsers: d.flagOf(row.all_users),
    url: row.url,
    description: row.description,
    createdAt: d.dateOf(row.created_at),
    disabledAt: row.disabled_at === null ? null : d.dateOf(row.disabled_at),
    disabledReason: row.disabled_reason,
  };
}

/** An attempt as both backends list it; plant_id as text (exact past 2^53). */
export interface AttemptRow {
  readonly event_id: string;
  readonly plant_id: string;
  readonly attempt: number;
  readonly status: number | null;
  readonly error: string | null;
  readonly at: unknown;
  readonly state: DeliveryState;
  readonly next_attempt_at: unknown;
  readonly test: unknown;
}

export function attemptOf(d: Dialect, row: AttemptRow): DeliveryAttempt {
  return {
    eventId: row.event_id,
    plantId: BigInt(row.plant_id),
    attempt: row.attempt,
    status: row.status,
    error: row.error,
    at: d.dateOf(row.at),
    state: row.state,
    nextAttemptAt: row.state === 'pending' && row.next_attempt_at !== null ? d.dateOf(row.next_attempt_at) : null,
    test: d.flagOf(row.test),
  };
}

/** A claimed event as both backends read it: seq a number, plant_id as text (exact past 2^53). */
export interface ClaimRow {
  readonly seq: number | string;
  readonly event_id: string;
  readonly endpoint_id: string;
  readonly username: string;
  readonly url: string;
  readonly secret: string;
  /** NULL unless its overlap is still running when claimed (see CLAIM_SECRETS in claim.ts). */
  readonly previous_secret: string | null;
  readonly previous_secret_expires_at: unknown;
  readonly plant_id: string;
  readonly body: string;
  readonly round_start: number;
  readonly test: unknown;
}

export function claimedOf(d: Dialect, row: ClaimRow, attempt: number): ClaimedDelivery {
  const overlap = row.previous_secret !== null && row.previous_secret_expires_at !== null;
  return {
    seq: Number(row.seq),
    eventId: row.event_id,
    endpointId: row.endpoint_id,
    user: row.username,
    url: row.url,
    secret: row.secret,
    previousSecret: overlap ? row.previous_secret : null,
    previousSecretExpiresAt: overlap ? d.dateOf(row.previous_secret_expires_at) : null,
    plantId: BigInt(row.plant_id),
    body: row.body,
    attempt,
    roundStart: row.round_start,
    test: d.flagOf(row.test),
  };
}

/** An endpoint's queued events go with it (through webhook_deliveries_due); finished ones go with the retention sweep. */
export function deleteEndpointDeliveries(d: Dialect): string {
  return render(d, sql`DELETE FROM webhook_deliveries WHERE endpoint_id = ${param('id')} AND state = 'pending'`).text;
}

export function deleteEndpointAttempts(d: Dialect): string {
  return render(d, sql`DELETE FROM webhook_attempts WHERE endpoint_id = ${param('id')}`).text;
}

/** No endpoint gets more than the whole claim: a longer range per endpoint is read for nothing. */
export function perEndpoint(request: { readonly limit: number; readonly perEndpoint: number }): number {
  return Math.min(request.perEndpoint, request.limit);
}
