import { STORABLE_TEXT } from '../domain/plant.js';
import { newEndpointId, newWebhookSecret, type WebhookEndpoint } from '../domain/webhook.js';
import type { Store } from '../store/store.js';
import { webhookUrlProblem } from './destination.js';

/** Longest description an endpoint may carry, in Unicode characters (code points, as ajv counts). */
export const DESCRIPTION_MAX_CHARS = 500;

/**
 * What a URL may not contain, beyond webhookUrlProblem's rules: whitespace and control characters, which
 * the WHATWG URL parser silently strips or removes (`"http://exa\nmple.com"` is example.com), so the
 * stored text would not say where requests go; and what no store keeps exactly (see STORABLE_TEXT).
 */
const URL_UNSAFE_CHARS = '\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
const URL_UNSAFE = new RegExp(`[${URL_UNSAFE_CHARS}\\uD800-\\uDFFF]`, 'u');

/**
 * The form of a URL registration may take, as far as a pattern can say it: none of URL_UNSAFE's
 * characters (unpaired surrogates as STORABLE_CHAR says them, alike with or without Unicode mode), and an
 * http: or https: scheme in any case, which must then come first, since nothing may precede it. Whether
 * a host follows, and what address it is, webhookUrlProblem decides.
 */
export const URL_FORM =
  `^[Hh][Tt][Tt][Pp][Ss]?:(?:[^${URL_UNSAFE_CHARS}\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])+$`;
export const URL_FORM_RULE =
  'must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates (percent-encode them)';
const STORABLE = new RegExp(STORABLE_TEXT, 'u');

/** Why a registration is refused; `kind` picks the error row (HTTP) or the exit code (CLI). */
export class WebhookRequestError extends Error {
  readonly kind: 'invalid' | 'private' | 'limit';

  constructor(kind: 'invalid' | 'private' | 'limit', message: string) {
    super(message);
    this.kind = kind;
  }
}

/** Why `url` cannot be registered, or null: the rules of webhookUrlProblem, and no hidden characters. */
export function endpointUrlProblem(url: string, allowPrivate: boolean): { reason: string; privateAddress: boolean } | null {
  if (URL_UNSAFE.test(url)) return { reason: 'must not contain spaces, control characters or unpaired surrogates (percent-encode them)', privateAddress: false };
  return webhookUrlProblem(url, allowPrivate);
}

/** Why `description` cannot be stored, or null (the HTTP schema states the same rules). */
export function descriptionProblem(description: string): string | null {
  if ([...description].length > DESCRIPTION_MAX_CHARS) return `must be at most ${DESCRIPTION_MAX_CHARS} characters`;
  if (!STORABLE.test(description)) return 'must not contain U+0000 or unpaired surrogates';
  return null;
}

export interface WebhookRequest {
  readonly user: string;
  /** Receives every user's new plants (an admin token, or `--all`). */
  readonly allUsers: boolean;
  readonly url: string;
  readonly description?: string | undefined;
}

export interface WebhookSettings {
  /** WEBHOOK_ALLOW_PRIVATE. */
  readonly allowPrivate: boolean;
  /** WEBHOOK_MAX_PER_USER. */
  readonly maxPerUser: number;
}

/**
 * Registers an endpoint, for `POST /webhooks` and `plantstore webhook add` alike: checks the URL (and the
 * description), makes the id and the secret, and stores it unless the user is at the limit. The secret is
 * returned here once; the store keeps it as it is, since signing needs it (it cannot be hashed).
 */
export async function registerWebhook(
  store: Store,
  request: WebhookRequest,
  { allowPrivate, maxPerUser }: WebhookSettings,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const urlProblem = endpointUrlProblem(request.url, allowPrivate);
  if (urlProblem) throw new WebhookRequestError(urlProblem.privateAddress ? 'private' : 'invalid', `url ${urlProblem.reason}`);
  const problem = request.description === undefined ? null : descriptionProblem(request.description);
  if (problem) throw new WebhookRequestError('invalid', `description ${problem}`);
  const secret = newWebhookSecret();
  const endpoint = await store.webhooks.createWebhook(
    {
      id: newEndpointId(),
      user: request.user,
      allUsers: request.allUsers,
      url: request.url,
      description: request.description ?? null,
      secret,
    },
    maxPerUser,
  );
  if (endpoint === 'limit') {
    throw new WebhookRequestError('limit', `the limit is ${maxPerUser}; remove an endpoint first`);
  }
  return { endpoint, secret };
}
