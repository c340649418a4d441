import { Type, type Static } from 'typebox';
import { STORABLE_TEXT } from '../../../domain/plant.js';
import type { DeliveryState, WebhookDeliveryView, WebhookView } from '../../../domain/webhook.js';
import { WEBHOOK_URL_MAX_CHARS } from '../../../webhooks/destination.js';
import { DEFAULT_SECRET_OVERLAP, OVERLAP, RFC3339 } from '../../../webhooks/operations.js';
import { DESCRIPTION_MAX_CHARS, URL_FORM } from '../../../webhooks/register.js';

/**
 * The schemas of the /webhooks routes, published under components.schemas (see schemas.ts). Responses
 * are closed (additionalProperties: false), so that the serializer never lets a field through that the
 * document does not name: a secret, above all.
 */
const Url = () =>
  Type.String({
    minLength: 1,
    maxLength: WEBHOOK_URL_MAX_CHARS,
    pattern: URL_FORM,
    description:
      `Absolute http: or https: URL, at most ${WEBHOOK_URL_MAX_CHARS} characters, without credentials, spaces, control characters or unpaired surrogates; ` +
      'not a loopback, private, link-local, unspecified or multicast address unless the server allows them (WEBHOOK_ALLOW_PRIVATE). ' +
      'The pattern gives the scheme and the characters; that a host follows, without credentials, and what address it is, the server checks (400)',
  });
const Description = () =>
  Type.String({
    maxLength: DESCRIPTION_MAX_CHARS,
    pattern: STORABLE_TEXT,
    description: `0 to ${DESCRIPTION_MAX_CHARS} characters; no U+0000 and no unpaired surrogates`,
  });

export const NewWebhookSchema = Type.Object(
  { url: Url(), description: Type.Optional(Description()) },
  { $id: 'NewWebhook', description: 'A webhook endpoint to register; unknown fields are ignored' },
);
export type NewWebhookBody = Static<typeof NewWebhookSchema>;

const DateTime = (description: string) => Type.String({ format: 'date-time', description });

export const CreatedWebhookSchema = Type.Object(
  {
    id: Type.String({ description: 'Opaque endpoint id (ep_…)' }),
    url: Type.String(),
    description: Type.Optional(Type.String()),
    secret: Type.String({
      description: 'The Standard Webhooks signing secret (whsec_ + base64 of 32 random bytes). Shown in this answer only.',
    }),
    createdAt: DateTime('When it was registered'),
  },
  { $id: 'CreatedWebhook', additionalProperties: false, description: 'A registered endpoint, with its secret (shown once)' },
);
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;

export const WebhookSchema = Type.Object(
  {
    id: Type.String({ description: 'Opaque endpoint id (ep_…)' }),
    user: Type.String({ description: 'The user who registered it' }),
    allUsers: Type.Boolean({
      description: 'Receives every user\'s new plants: registered with an admin token, and its user still holds an active one. Else its user\'s',
    }),
    url: Type.String(),
    description: Type.Optional(Type.String()),
    createdAt: DateTime('When it was registered'),
    disabledAt: Type.Optional(
      DateTime('When the receiver answered 410 Gone, or someone disabled it (PATCH "enabled": false); nothing is sent to it since. Absent while enabled'),
    ),
    disabledReason: Type.Optional(Type.String({ description: 'Why it was disabled' })),
  },
  { $id: 'Webhook', additionalProperties: false, description: 'A registered endpoint, never with its secret' },
);

/** The same shape both ways: the published schema and the view the code builds cannot drift apart. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const webhookViewMatches: Same<Static<typeof WebhookSchema>, WebhookView> = true;

export const WebhookDeliverySchema = Type.Object(
  {
    eventId: Type.String({ description: 'The webhook-id header: the same on every attempt of one event to one endpoint' }),
    // fast-json-stringify writes a bigint's exact digits for an integer schema.
    plantId: Type.Unsafe<bigint>(Type.Integer({ format: 'int64', description: 'The new plant\'s id, exact' })),
    attempt: Type.Integer({ minimum: 1, description: '1 for the first attempt' }),
    status: Type.Unsafe<number | null>({
      type: ['integer', 'null'],
      description: 'The receiver\'s HTTP status, or null when none came (refused, timed out, destination not allowed)',
    }),
    error: Type.Optional(Type.String({ description: 'Why the attempt failed, briefly; absent when it succeeded' })),
    at: DateTime('When the attempt was made'),
    state: Type.Unsafe<DeliveryState>(
      Type.String({
        enum: ['pending', 'delivered', 'failed'],
        description: 'The event\'s state after this attempt: pending (to be retried), delivered, or failed (given up)',
      }),
    ),
    nextAttemptAt: Type.Optional(DateTime('When the next attempt is due; only when pending')),
    test: Type.Optional(Type.Literal(true, { description: 'A test event (POST /webhooks/{id}/test), not a plant (plantId 0); absent otherwise' })),
  },
  { $id: 'WebhookDelivery', additionalProperties: false, description: 'One attempt to deliver one event' },
);
export const WebhookUpdateSchema = Type.Object(
  {
    url: Type.Optional(Url()),
    description: Type.Optional(Description()),
    enabled: Type.Optional(Type.Boolean({
      description: 'true enables a disabled endpoint again (disabledAt and disabledReason go); false disables it by hand ("disabled by <user>")',
    })),
  },
  { $id: 'WebhookUpdate', description: 'What to change of an endpoint; what is left out stays. Unknown fields are ignored' },
);
export type WebhookUpdateBody = Static<typeof WebhookUpdateSchema>;

export const WebhookRecoverySchema = Type.Object(
  {
    since: Type.String({
      pattern: RFC3339,
      description:
        'An RFC 3339 date-time whose date exists (the pattern spells out the calendar) and whose seconds are 00 to 59 (no leap second): ' +
        'every failed event created at or after it (and still kept) is queued again',
    }),
  },
  { $id: 'WebhookRecovery', description: 'Which failed events to send again' },
);
export type WebhookRecoveryBody = Static<typeof WebhookRecoverySchema>;

export const WebhookSecretRotationSchema = Type.Object(
  {
    overlap: Type.Optional(Type.String({
      pattern: OVERLAP,
      default: DEFAULT_SECRET_OVERLAP,
      description:
        'How long the replaced secret keeps signing too: 0 (not at all; 0s, 0m, 0h and 0d alike) or a duration such as 90s, 15m, 24h, ' +
        `at most 7d (604800s, 10080m, 168h); default ${DEFAULT_SECRET_OVERLAP}`,
    })),
  },
  { $id: 'WebhookSecretRotation', description: 'How to rotate; the body may be left out' },
);
export type WebhookSecretRotationBody = Static<typeof WebhookSecretRotationSchema>;

export const RotatedWebhookSecretSchema = Type.Object(
  {
    secret: Type.String({ description: 'The new signing secret (whsec_…). Shown in this answer only' }),
    previousSecretExpiresAt: DateTime('Until when deliveries also carry a signature with the replaced secret (now, without an overlap)'),
  },
  { $id: 'RotatedWebhookSecret', additionalProperties: false, description: 'The endpoint\'s new secret (shown once)' },
);
export type RotatedWebhookSecret = Static<typeof RotatedWebhookSecretSchema>;

export const QueuedWebhookEventSchema = Type.Object(
  { eventId: Type.String({ description: 'The event\'s id: its webhook-id header, as GET /webhooks/{id}/deliveries shows it' }) },
  { $id: 'QueuedWebhookEvent', additionalProperties: false, description: 'An event queued for delivery' },
);

export const RecoveredWebhookEventsSchema = Type.Object(
  { queued: Type.Integer({ minimum: 0, description: 'How many failed events were queued again' }) },
  { $id: 'RecoveredWebhookEvents', additionalProperties: false, description: 'Failed events queued again' },
);

const deliveryViewMatches: Same<Static<typeof WebhookDeliverySchema>, WebhookDeliveryView> = true;
void webhookViewMatches;
void deliveryViewMatches;

/** The schemas the webhook routes add in their scope (index.ts), in the order /openapi.json lists them. */
export const WEBHOOK_SCHEMAS = [
  NewWebhookSchema, CreatedWebhookSchema, WebhookSchema, WebhookDeliverySchema, WebhookUpdateSchema, WebhookRecoverySchema,
  WebhookSecretRotationSchema, RotatedWebhookSecretSchema, QueuedWebhookEventSchema, RecoveredWebhookEventsSchema,
];
