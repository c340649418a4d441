import { userNameProblem } from '../domain/principal.js';
import type { DeliveryAttempt, WebhookEndpoint } from '../domain/webhook.js';
import { loadConfig } from '../config/load.js';
import type { WebhookOperationResult } from '../store/store.js';
import {
  DEFAULT_SECRET_OVERLAP, OVERLAP_RULE, parseOverlap, parseRfc3339, rotateWebhookSecret, SINCE_RULE, updateWebhook,
} from '../webhooks/operations.js';
import { deliveryView } from '../webhooks/views.js';
import { descriptionProblem, endpointUrlProblem, registerWebhook, WebhookRequestError } from '../webhooks/register.js';
import { parse, UsageError } from './args.js';
import { DATABASE_OPTION, withStore } from './store.js';
import { cell, printTable } from './table.js';
import type { Cli } from './io.js';

export const WEBHOOK_HELP = `Usage:
  plantstore webhook add --user NAME --url URL [--all] [--description TEXT]
  plantstore webhook list [--user NAME] [--json]
  plantstore webhook remove ID
  plantstore webhook deliveries ID [--limit N] [--json]
  plantstore webhook update ID [--url URL] [--description TEXT] [--enable | --disable]
  plantstore webhook resend ID EVENT_ID
  plantstore webhook recover ID --since TIME
  plantstore webhook rotate-secret ID [--overlap DURATION]
  plantstore webhook test ID

  --user NAME         add: the user whose new plants the endpoint receives; list: only this user's
  --url URL           add, update: an absolute http: or https: URL (at most 2048 characters, no credentials).
                      Loopback, private, link-local and multicast addresses are refused unless
                      WEBHOOK_ALLOW_PRIVATE=on; a user has at most WEBHOOK_MAX_PER_USER endpoints
  --all               add: the endpoint receives every user's new plants (as one registered with an
                      admin token does) while the user holds an active admin token
  --description TEXT  add, update: a note shown by "webhook list" (up to 500 characters)
  --limit N           deliveries: the latest N attempts, 1 to 1000; default 50
  --json              list, deliveries: print a JSON array
  --enable            update: enable an endpoint disabled by a 410 Gone or by hand
  --disable           update: disable it by hand; its pending events fail (recover them later)
  --since TIME        recover: queue again every failed event created at or after TIME, an RFC 3339
                      date-time (2025-01-31T09:00:00Z), still kept (WEBHOOK_RETENTION)
  --overlap DURATION  rotate-secret: how long the replaced secret also signs: 0 (or 0s), or 90s, 15m,
                      24h, 7d at most; default 24h
  --database-url URL  The store to use; default: DATABASE_URL, else sqlite:./data/plantstore.db,
                      relative to the working directory (as for the token commands).
  --config FILE       Read DATABASE_URL (and any other setting) from FILE, KEY=value lines, as the
                      server does; also PLANTSTORE_CONFIG=FILE. A flag or variable wins over it.

The store used is printed on stderr ("using …"). "webhook add" prints the endpoint's signing secret
(whsec_…) once, alone on the last line of stdout, and its ID on stderr. Removing an endpoint removes its
queued events: no delivery to it starts afterwards. "webhook resend" queues one event again (its
EVENT_ID as "webhook deliveries" shows it), with the same webhook-id; "webhook test" queues a test event
for that endpoint alone and prints its event id. A running server delivers what they queue within a
second. These commands are not held to WEBHOOK_MAX_QUEUED_PER_USER (an operator may recover a backlog
of any size), but what they queue counts towards it: until it is delivered, the user's own test, resend
and recover through the API may be refused. "webhook rotate-secret" prints the new secret alone on the
last line of stdout.`;

export async function webhookAdd(args: string[], cli: Cli): Promise<void> {
  const { values } = parse(args, {
    ...DATABASE_OPTION,
    user: { type: 'string' },
    url: { type: 'string' },
    all: { type: 'boolean' },
    description: { type: 'string' },
  });
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const { user, url, description } = values;
  if (user === undefined) throw new UsageError('webhook add needs --user NAME');
  if (url === undefined) throw new UsageError('webhook add needs --url URL');
  const userProblem = userNameProblem(user);
  if (userProblem) throw new UsageError(`user name ${userProblem}`);
  // WEBHOOK_ALLOW_PRIVATE and WEBHOOK_MAX_PER_USER, as the server reads them; checked before the store
  // opens, so that a refused URL creates no store.
  const config = loadConfig({ 'database-url': values['database-url'] }, cli.env, cli.cwd);
  const settings = { allowPrivate: config.webhookAllowPrivate, maxPerUser: config.webhookMaxPerUser };
  const urlProblem = endpointUrlProblem(url, settings.allowPrivate);
  if (urlProblem) throw new UsageError(`--url ${urlProblem.reason}${urlProblem.privateAddress ? ' (WEBHOOK_ALLOW_PRIVATE=on allows it)' : ''}`);
  const problem = description === undefined ? null : descriptionProblem(description);
  if (problem) throw new UsageError(`--description ${problem}`);
  const { endpoint, secret } = await withStore(cli, values['database-url'], async (store) => {
    try {
      return await registerWebhook(store, { user, allUsers: values.all ?? false, url, description }, settings);
    } catch (error) {
      if (error instanceof WebhookRequestError && error.kind === 'limit') {
        throw new Error(`user "${user}" already has as many webhook endpoints as allowed (WEBHOOK_MAX_PER_USER): ${error.message}`);
      }
      throw error;
    }
  });
  cli.warn(
    `Created webhook endpoint ${endpoint.id} for user "${endpoint.user}" ` +
      `(receives ${endpoint.allUsers ? 'every user\'s' : 'this user\'s'} new plants): ${endpoint.url}`,
  );
  if (values.all && !endpoint.allUsers) {
    cli.warn(`warning: user "${user}" holds no active admin token: the endpoint gets only this user's plants until it does`);
  }
  cli.warn('Its signing secret; store it now, it is not shown again:');
  cli.print(secret);
}

export async function webhookList(args: string[], cli: Cli): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, user: { type: 'string' }, json: { type: 'boolean' } });
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const endpoints = await withStore(cli, values['database-url'], (store) => store.webhooks.listWebhooks(values.user ?? null), {
    missing: 'there are no webhook endpoints to list',
  });
  if (values.json) {
    const out = endpoints.map((e) => ({
      id: e.id, user: e.user, allUsers: e.allUsers, url: e.url, description: e.description, createdAt: e.createdAt.toISOString(),
      disabledAt: e.disabledAt?.toISOString() ?? null, disabledReason: e.disabledReason,
    }));
    return void cli.print(JSON.stringify(out, null, 2));
  }
  printTable(cli, [
    ['ID', 'USER', 'ALL', 'URL', 'CREATED', 'STATUS', 'DESCRIPTION'],
    ...endpoints.map((e) => [
      e.id, cell(e.user), e.allUsers ? 'yes' : 'no', cell(e.url), e.createdAt.toISOString(),
      e.disabledAt === null ? 'active' : `disabled ${e.disabledAt.toISOString()}${e.disabledReason ? ` (${cell(e.disabledReason)})` : ''}`,
      e.description === null ? '-' : cell(e.description),
    ]),
  ]);
}

/** The one positional argument of `webhook remove` and `webhook deliveries`: an endpoint id. */
function endpointIdArgument(command: string, positionals: string[]): string {
  const [id, ...extra] = positionals;
  if (id === undefined || extra.length > 0 || id === '') throw new UsageError(`webhook ${command} needs one endpoint ID (see "webhook list")`);
  return id;
}

export async function webhookRemove(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, DATABASE_OPTION, true);
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const id = endpointIdArgument('remove', positionals);
  const removed = await withStore(cli, values['database-url'], (store) => store.webhooks.deleteWebhook(id, null), { missing: 'there is no webhook endpoint to remove' });
  if (!removed) throw new Error(`no webhook endpoint with ID ${id}`);
  cli.print(`Removed webhook endpoint ${id}; no delivery to it starts from now on.`);
}

const DELIVERIES_LIMIT = /^[1-9]\d{0,3}$/;

/**
 * JSON text of delivery attempts with each plantId as a JSON number of its exact digits (JSON.stringify
 * cannot write a bigint). The id goes in as a string and loses its quotes here: an unescaped `"plantId": "`
 * can only be that key, since quotes inside string values are escaped.
 */
function deliveriesJson(attempts: readonly DeliveryAttempt[]): string {
  const text = JSON.stringify(attempts.map((a) => ({ ...deliveryView(a), plantId: a.plantId.toString() })), null, 2);
  return text.replace(/"plantId": "(-?\d{1,20})"/g, '"plantId": $1');
}

export async function webhookDeliveries(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, { ...DATABASE_OPTION, limit: { type: 'string' }, json: { type: 'boolean' } }, true);
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const id = endpointIdArgument('deliveries', positionals);
  const limitText = values.limit ?? '50';
  if (!DELIVERIES_LIMIT.test(limitText) || Number(limitText) > 1000) throw new UsageError(`--limit must be a whole number from 1 to 1000, got "${limitText}"`);
  const attempts = await withStore(cli, values['database-url'], (store) => store.webhooks.listDeliveryAttempts(id, null, Number(limitText)), {
    missing: 'there are no deliveries to show',
  });
  if (attempts === null) throw new Error(`no webhook endpoint with ID ${id}`);
  if (values.json) return void cli.print(deliveriesJson(attempts));
  printTable(cli, [
    ['AT', 'EVENT', 'PLANT', 'ATTEMPT', 'STATUS', 'STATE', 'NEXT', 'ERROR'],
    ...attempts.map((a) => [
      a.at.toISOString(), a.eventId, a.plantId.toString(), String(a.attempt), a.status === null ? '-' : String(a.status), a.state,
      a.state === 'pending' && a.nextAttemptAt !== null ? a.nextAttemptAt.toISOString() : '-', a.error === null ? '-' : cell(a.error),
    ]),
  ]);
}

/** One endpoint id, then `extra` more positionals exactly (`webhook resend ID EVENT_ID`). */
function positionalIds(command: string, positionals: string[], names: readonly string[]): string[] {
  if (positionals.length !== names.length || positionals.some((p) => p === '')) {
    throw new UsageError(`webhook ${command} needs ${names.join(' and ')} (see "webhook list" and "webhook deliveries")`);
  }
  return positionals;
}

/**
 * What an operation answered when it queued nothing: the endpoint is unknown, or disabled. The CLI asks
 * for no bound (WEBHOOK_MAX_QUEUED_PER_USER holds the API's callers back), so it is never 'queue-full'.
 */
function queuedOrThrow<T>(id: string, result: WebhookOperationResult<T>): T {
  if (typeof result === 'object' && result !== null && 'refused' in result) {
    if (result.refused === 'queue-full') throw new Error(`the user of webhook endpoint ${id} has ${result.pending} events queued by operations`);
    throw new Error(result.refused === 'disabled' ? `webhook endpoint ${id} is disabled: enable it first (webhook update ${id} --enable)` : `no webhook endpoint with ID ${id}`);
  }
  return result;
}

const status = (e: WebhookEndpoint) => (e.disabledAt === null ? 'active' : `disabled ${e.disabledAt.toISOString()}${e.disabledReason ? ` (${e.disabledReason})` : ''}`);

export async function webhookUpdate(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, {
    ...DATABASE_OPTION, url: { type: 'string' }, description: { type: 'string' }, enable: { type: 'boolean' }, disable: { type: 'boolean' },
  }, true);
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const [id] = positionalIds('update', positionals, ['one endpoint ID']) as [string];
  const { url, description, enable, disable } = values;
  if (enable && disable) throw new UsageError('webhook update takes --enable or --disable, not both');
  if (url === undefined && description === undefined && !enable && !disable) {
    throw new UsageError('webhook update needs something to change: --url, --description, --enable or --disable');
  }
  const config = loadConfig({ 'database-url': values['database-url'] }, cli.env, cli.cwd);
  const urlProblem = url === undefined ? null : endpointUrlProblem(url, config.webhookAllowPrivate);
  if (urlProblem) throw new UsageError(`--url ${urlProblem.reason}${urlProblem.privateAddress ? ' (WEBHOOK_ALLOW_PRIVATE=on allows it)' : ''}`);
  const problem = description === undefined ? null : descriptionProblem(description);
  if (problem) throw new UsageError(`--description ${problem}`);
  const request = { url, description, enabled: enable ? true : disable ? false : undefined };
  const updated = await withStore(cli, values['database-url'], (store) => updateWebhook(store, id, null, request, 'an operator (CLI)', config.webhookAllowPrivate), {
    missing: 'there is no webhook endpoint to update',
  });
  if (updated === null) throw new Error(`no webhook endpoint with ID ${id}`);
  cli.print(`Updated webhook endpoint ${updated.id}: ${updated.url} (${status(updated)})`);
}

export async function webhookResend(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, DATABASE_OPTION, true);
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const [id, eventId] = positionalIds('resend', positionals, ['an endpoint ID', 'an EVENT_ID']) as [string, string];
  const result = await withStore(cli, values['database-url'], async (store) => queuedOrThrow(id, await store.webhooks.resendWebhookEvent(id, null, eventId)), {
    missing: 'there is no webhook event to send again',
  });
  if (result === 'no-event') throw new Error(`webhook endpoint ${id} has no event ${eventId} it still receives (see "webhook deliveries ${id}")`);
  cli.print(`Queued event ${eventId} for webhook endpoint ${id} again, with the same webhook-id.`);
}

export async function webhookRecover(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, { ...DATABASE_OPTION, since: { type: 'string' } }, true);
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const [id] = positionalIds('recover', positionals, ['one endpoint ID']) as [string];
  if (values.since === undefined) throw new UsageError('webhook recover needs --since TIME');
  const since = parseRfc3339(values.since);
  if (since === null) throw new UsageError(`--since ${SINCE_RULE}, got "${values.since}"`);
  const queued = await withStore(cli, values['database-url'], async (store) => queuedOrThrow(id, await store.webhooks.recoverWebhookEvents(id, null, since)), {
    missing: 'there are no webhook events to recover',
  });
  cli.print(`Queued ${queued} failed event${queued === 1 ? '' : 's'} of webhook endpoint ${id} again (created since ${since.toISOString()}).`);
}

export async function webhookRotateSecret(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, { ...DATABASE_OPTION, overlap: { type: 'string' } }, true);
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const [id] = positionalIds('rotate-secret', positionals, ['one endpoint ID']) as [string];
  const overlapText = values.overlap ?? DEFAULT_SECRET_OVERLAP;
  const overlapMs = parseOverlap(overlapText);
  if (overlapMs === null) throw new UsageError(`--overlap ${OVERLAP_RULE}, got "${overlapText}"`);
  const rotated = await withStore(cli, values['database-url'], (store) => rotateWebhookSecret(store, id, null, overlapMs), {
    missing: 'there is no webhook endpoint to rotate',
  });
  if (rotated === null) throw new Error(`no webhook endpoint with ID ${id}`);
  cli.warn(
    overlapMs === 0
      ? `Rotated the secret of webhook endpoint ${id}; the replaced one signs no more.`
      : `Rotated the secret of webhook endpoint ${id}; the replaced one also signs until ${rotated.previousSecretExpiresAt.toISOString()}.`,
  );
  cli.warn('Its new signing secret; store it now, it is not shown again:');
  cli.print(rotated.secret);
}

export async function webhookTest(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, DATABASE_OPTION, true);
  if (values.help) return void cli.print(WEBHOOK_HELP);
  const [id] = positionalIds('test', positionals, ['one endpoint ID']) as [string];
  const eventId = await withStore(cli, values['database-url'], async (store) => queuedOrThrow(id, await store.webhooks.queueTestEvent(id, null)), {
    missing: 'there is no webhook endpoint to test',
  });
  cli.warn(`Queued a test event for webhook endpoint ${id}; its event id (see "webhook deliveries ${id}"):`);
  cli.print(eventId);
}
