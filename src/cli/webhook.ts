import { userNameProblem } from '../domain/principal.js';
import type { DeliveryAttempt } from '../domain/webhook.js';
import { loadConfig } from '../config/load.js';
import { deliveryView } from '../webhooks/views.js';
import { descriptionProblem, endpointUrlProblem, registerWebhook, WebhookRequestError } from '../webhooks/register.js';
import { parse, UsageError } from './args.js';
import { DATABASE_OPTION, withStore } from './store.js';
import { cell, printTable } from './table.js';

export const WEBHOOK_HELP = `Usage:
  plantstore webhook add --user NAME --url URL [--all] [--description TEXT]
  plantstore webhook list [--user NAME] [--json]
  plantstore webhook remove ID
  plantstore webhook deliveries ID [--limit N] [--json]

  --user NAME         add: the user whose new plants the endpoint receives; list: only this user's
  --url URL           add: an absolute http: or https: URL (at most 2048 characters, no credentials).
                      Loopback, private, link-local and multicast addresses are refused unless
                      WEBHOOK_ALLOW_PRIVATE=on; a user has at most WEBHOOK_MAX_PER_USER endpoints
  --all               add: the endpoint receives every user's new plants (as one registered with an
                      admin token does) while the user holds an active admin token
  --description TEXT  add: a note shown by "webhook list" (up to 500 characters)
  --limit N           deliveries: the latest N attempts, 1 to 1000; default 50
  --json              list, deliveries: print a JSON array
  --database-url URL  The store to use; default: DATABASE_URL, else sqlite:./data/plantstore.db,
                      relative to the working directory (as for the token commands).

The store used is printed on stderr ("using …"). "webhook add" prints the endpoint's signing secret
(whsec_…) once, alone on the last line of stdout, and its ID on stderr. Removing an endpoint removes its
queued events: no delivery to it starts afterwards.`;

export async function webhookAdd(args: string[]): Promise<void> {
  const { values } = parse(args, {
    ...DATABASE_OPTION,
    user: { type: 'string' },
    url: { type: 'string' },
    all: { type: 'boolean' },
    description: { type: 'string' },
  });
  if (values.help) return void console.log(WEBHOOK_HELP);
  const { user, url, description } = values;
  if (user === undefined) throw new UsageError('webhook add needs --user NAME');
  if (url === undefined) throw new UsageError('webhook add needs --url URL');
  const userProblem = userNameProblem(user);
  if (userProblem) throw new UsageError(`user name ${userProblem}`);
  // WEBHOOK_ALLOW_PRIVATE and WEBHOOK_MAX_PER_USER, as the server reads them; checked before the store
  // opens, so that a refused URL creates no store.
  const config = loadConfig({ 'database-url': values['database-url'] });
  const settings = { allowPrivate: config.webhookAllowPrivate, maxPerUser: config.webhookMaxPerUser };
  const urlProblem = endpointUrlProblem(url, settings.allowPrivate);
  if (urlProblem) throw new UsageError(`--url ${urlProblem.reason}${urlProblem.privateAddress ? ' (WEBHOOK_ALLOW_PRIVATE=on allows it)' : ''}`);
  const problem = description === undefined ? null : descriptionProblem(description);
  if (problem) throw new UsageError(`--description ${problem}`);
  const { endpoint, secret } = await withStore(values['database-url'], async (store) => {
    try {
      return await registerWebhook(store, { user, allUsers: values.all ?? false, url, description }, settings);
    } catch (error) {
      if (error instanceof WebhookRequestError && error.kind === 'limit') {
        throw new Error(`user "${user}" already has as many webhook endpoints as allowed (WEBHOOK_MAX_PER_USER): ${error.message}`);
      }
      throw error;
    }
  });
  console.error(
    `Created webhook endpoint ${endpoint.id} for user "${endpoint.user}" ` +
      `(receives ${endpoint.allUsers ? 'every user\'s' : 'this user\'s'} new plants): ${endpoint.url}`,
  );
  if (values.all && !endpoint.allUsers) {
    console.error(`warning: user "${user}" holds no active admin token: the endpoint gets only this user's plants until it does`);
  }
  console.error('Its signing secret; store it now, it is not shown again:');
  console.log(secret);
}

export async function webhookList(args: string[]): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, user: { type: 'string' }, json: { type: 'boolean' } });
  if (values.help) return void console.log(WEBHOOK_HELP);
  const endpoints = await withStore(values['database-url'], (store) => store.webhooks.listWebhooks(values.user ?? null), {
    missing: 'there are no webhook endpoints to list',
  });
  if (values.json) {
    const out = endpoints.map((e) => ({
      id: e.id, user: e.user, allUsers: e.allUsers, url: e.url, description: e.description, createdAt: e.createdAt.toISOString(),
      disabledAt: e.disabledAt?.toISOString() ?? null, disabledReason: e.disabledReason,
    }));
    return void console.log(JSON.stringify(out, null, 2));
  }
  printTable([
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

export async function webhookRemove(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, DATABASE_OPTION, true);
  if (values.help) return void console.log(WEBHOOK_HELP);
  const id = endpointIdArgument('remove', positionals);
  const removed = await withStore(values['database-url'], (store) => store.webhooks.deleteWebhook(id, null), { missing: 'there is no webhook endpoint to remove' });
  if (!removed) throw new Error(`no webhook endpoint with ID ${id}`);
  console.log(`Removed webhook endpoint ${id}; no delivery to it starts from now on.`);
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

export async function webhookDeliveries(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { ...DATABASE_OPTION, limit: { type: 'string' }, json: { type: 'boolean' } }, true);
  if (values.help) return void console.log(WEBHOOK_HELP);
  const id = endpointIdArgument('deliveries', positionals);
  const limitText = values.limit ?? '50';
  if (!DELIVERIES_LIMIT.test(limitText) || Number(limitText) > 1000) throw new UsageError(`--limit must be a whole number from 1 to 1000, got "${limitText}"`);
  const attempts = await withStore(values['database-url'], (store) => store.webhooks.listDeliveryAttempts(id, null, Number(limitText)), {
    missing: 'there are no deliveries to show',
  });
  if (attempts === null) throw new Error(`no webhook endpoint with ID ${id}`);
  if (values.json) return void console.log(deliveriesJson(attempts));
  printTable([
    ['AT', 'EVENT', 'PLANT', 'ATTEMPT', 'STATUS', 'STATE', 'NEXT', 'ERROR'],
    ...attempts.map((a) => [
      a.at.toISOString(), a.eventId, a.plantId.toString(), String(a.attempt), a.status === null ? '-' : String(a.status), a.state,
      a.state === 'pending' && a.nextAttemptAt !== null ? a.nextAttemptAt.toISOString() : '-', a.error === null ? '-' : cell(a.error),
    ]),
  ]);
}
