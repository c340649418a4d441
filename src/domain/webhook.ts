import { randomBytes } from 'node:crypto';
import type { NewPlant } from './plant.js';
import { wireJson, type WireField } from './wire.js';

/** A subscriber's URL, as registered (POST /webhooks or `plantstore webhook add`). */
export interface WebhookEndpoint {
  /** Opaque: `ep_` + 22 base64url characters (128 random bits). */
  readonly id: string;
  /** The user whose token (or --user) registered it. */
  readonly user: string;
  /**
   * Receives every user's new plants, else its user's only: registered with an admin token (an admin JWT,
   * or `--all`) and its user holds an active admin token now (see store/sql/all-users.ts).
   */
  readonly allUsers: boolean;
  readonly url: string;
  readonly description: string | null;
  readonly createdAt: Date;
  /** Set when a receiver answered 410 Gone, or someone disabled it by hand: nothing more is queued for it or sent to it. */
  readonly disabledAt: Date | null;
  readonly disabledReason: string | null;
}

export interface NewWebhookEndpoint {
  readonly id: string;
  readonly user: string;
  readonly allUsers: boolean;
  readonly url: string;
  readonly description: string | null;
  /** The Standard Webhooks secret, `whsec_` + base64. Stored as it is: signing needs it (docs/webhooks.md). */
  readonly secret: string;
}

/** An event's state after one attempt: retried later, delivered, or given up. */
export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** One attempt to deliver one event to one endpoint, as `GET /webhooks/{id}/deliveries` shows it. */
export interface DeliveryAttempt {
  /** The `webhook-id` header: the same on every attempt of one event to one endpoint. */
  readonly eventId: string;
  readonly plantId: bigint;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** The receiver's HTTP status, or null when none came (refused, timed out, destination not allowed). */
  readonly status: number | null;
  /** Short text when the attempt failed, else null. */
  readonly error: string | null;
  readonly at: Date;
  /** The event's state after this attempt. */
  readonly state: DeliveryState;
  /** When `state` is pending: when the next attempt is due. */
  readonly nextAttemptAt: Date | null;
  /** A test event (POST /webhooks/{id}/test), not a plant: plantId is 0. */
  readonly test: boolean;
}

/**
 * An endpoint as GET /webhooks lists it (and `webhook list` prints): never its secret; absent values
 * are left out, never null. The route's published schema is checked against this shape.
 */
export interface WebhookView {
  id: string;
  user: string;
  allUsers: boolean;
  url: string;
  description?: string;
  createdAt: string;
  disabledAt?: string;
  disabledReason?: string;
}

/** An attempt as GET /webhooks/{id}/deliveries lists it; nextAttemptAt only while the event is pending. */
export interface WebhookDeliveryView {
  eventId: string;
  plantId: bigint;
  attempt: number;
  status: number | null;
  error?: string;
  at: string;
  state: DeliveryState;
  nextAttemptAt?: string;
  test?: true;
}

/** An event claimed by this instance for one attempt: it holds a lease until `leaseMs` after the claim. */
export interface ClaimedDelivery {
  /** The store's row key of the event (a delivery). */
  readonly seq: number;
  readonly eventId: string;
  readonly endpointId: string;
  /** The user the endpoint belongs to (an admin's for an all-users endpoint): slots are shared fairly per user. */
  readonly user: string;
  readonly url: string;
  readonly secret: string;
  /**
   * The secret before the last rotation while its overlap lasts (read with the claim), else null: the
   * attempt is signed with both. The sender signs with it only while `previousSecretExpiresAt` is still
   * ahead of its own clock, so that the end of the overlap holds on every instance.
   */
  readonly previousSecret: string | null;
  readonly previousSecretExpiresAt: Date | null;
  readonly plantId: bigint;
  /** The exact request body (see `webhookBody`). */
  readonly body: string;
  /** This attempt's number, 1 for the first. */
  readonly attempt: number;
  /**
   * The attempts made before the event was last queued again (resend, recover): the retry schedule
   * starts over from there, so a resent event that fails again is retried as a new one is.
   */
  readonly roundStart: number;
  /** A test event: sent with the header `webhook-test: true`. */
  readonly test: boolean;
}

export interface ClaimRequest {
  /** This instance's id: its claims are the ones it may release or record. */
  readonly instance: string;
  /** At most this many events in all. */
  readonly limit: number;
  /**
   * At most this many events of one endpoint. Within `limit`, events are taken in turns: each user's
   * oldest due event first (its endpoints in turn), then each user's second, and so on.
   */
  readonly perEndpoint: number;
  /** Endpoints to skip: this instance already has as many of their events in flight as it allows. */
  readonly busy: readonly string[];
  /** The claim expires this long after it is made; an expired claim is due again (its instance died). */
  readonly leaseMs: number;
}

/**
 * How one attempt ended:
 * - delivered: a 2xx; the event is done.
 * - retry: failed; try again `retryInMs` from now.
 * - failed: failed, and the schedule is exhausted or the destination is not allowed; the event is given up.
 * - gone: the receiver answered 410; the event is given up, the endpoint disabled, and its other pending
 *   events given up too.
 */
export interface AttemptResult {
  readonly delivery: ClaimedDelivery;
  readonly outcome: 'delivered' | 'retry' | 'failed' | 'gone';
  readonly status: number | null;
  readonly error: string | null;
  /** When the attempt was made (the request sent). */
  readonly at: Date;
  /** For `retry`: the delay until the next attempt. */
  readonly retryInMs: number | null;
}

/** What PATCH /webhooks/{id} (and `webhook update`) changes; what is absent stays as it is. */
export interface WebhookChange {
  readonly url?: string | undefined;
  readonly description?: string | undefined;
  /** true: enabled again (disabledAt and disabledReason cleared). */
  readonly enable?: true | undefined;
  /** Disabled by hand, with this reason (an endpoint disabled already keeps its first reason). */
  readonly disable?: string | undefined;
}

/** The body of every test event (POST /webhooks/{id}/test): shaped as a NewPlant, with no plant behind it. */
export const TEST_EVENT_BODY = '{"id":0,"name":"plantstore test event","tag":"test"}';

/** The longest overlap a rotated secret may keep signing for. */
export const MAX_SECRET_OVERLAP_MS = 7 * 86_400_000;

/** What every endpoint id starts with, so that one is recognisable in logs and support requests. */
export const ENDPOINT_ID_PREFIX = 'ep_';

export function newEndpointId(): string {
  return ENDPOINT_ID_PREFIX + randomBytes(16).toString('base64url');
}

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes (the spec asks for 24 to 64). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The event's body: the NewPlant as stored, `{"id":…,"name":…}` or with `"tag"` after the name, compact,
 * the id's exact digits, strings escaped as JSON.stringify escapes them. Every backend stores exactly this
 * (SQLite makes it with webhookBody, PostgreSQL in SQL from the same definition: store/sql/wire.ts).
 */
export const WEBHOOK_BODY: readonly WireField[] = [
  { key: 'id', kind: 'int64', optional: false },
  { key: 'name', kind: 'string', optional: false },
  { key: 'tag', kind: 'string', optional: true },
];

export function webhookBody(plant: NewPlant): string {
  return wireJson(WEBHOOK_BODY, plant);
}

/**
 * An event's id (the `webhook-id` header): the prefix, the time it was queued in milliseconds since the
 * epoch as `timeDigits` hexadecimal digits (so ids sort by time), then `randomDigits` random hexadecimal
 * digits, lower case. Both backends make it in SQL, from this definition (store/sql/wire.ts).
 */
export const EVENT_ID = { prefix: 'msg_', timeDigits: 12, randomDigits: 20 } as const;

/** What an event id made by a store looks like (EVENT_ID). */
export const EVENT_ID_PATTERN = new RegExp(`^${EVENT_ID.prefix}[0-9a-f]{${EVENT_ID.timeDigits}}[0-9a-f]{${EVENT_ID.randomDigits}}$`);
