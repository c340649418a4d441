import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config/error.js';
import { loadConfig, loadDatabaseConfig, loadLogConfig, type Config } from '../config/load.js';
import { allowedValues, OPTIONS, type OptionInfo } from '../config/options.js';
import { isScope, SCOPES, userNameProblem, visibleText, type Scope } from '../domain/principal.js';
import type { DeliveryAttempt } from '../domain/webhook.js';
import { deliveryView } from '../webhooks/views.js';
import { descriptionProblem, endpointUrlProblem, registerWebhook, WebhookRequestError } from '../webhooks/register.js';
import type { Logger } from 'pino';
import { processLogger } from '../logger.js';
import { openTransferStore } from '../store/open.js';
import { parseDuration } from '../domain/duration.js';
import { OptionError, parse, UsageError } from './args.js';
import { withOpenedStore, withStore } from './store.js';
import { describeStore } from '../config/database.js';
import { newToken, parseTokenId, REVOCATION_WITHIN_MS, TOKEN_ID_MAX, tokenCreateFailure, TokenRequestError, tokenStatus as status } from '../domain/token.js';

/** Said already, as a log line (`serve`): main prints nothing more, and exits with this code. */
class LoggedError extends Error {
  constructor(readonly exitCode: number) {
    super('logged');
  }
}

const DATABASE_OPTION = { 'database-url': { type: 'string' } } as const;

const HELP = {
  main: `Usage: plantstore <command> [options]

Commands:
  serve                 Run the HTTP service (migrations run at start)
  migrate               Apply pending database migrations and exit
  token create          Create a bearer token (printed once, on the last line of stdout)
  token list            List tokens (never their secrets)
  token revoke ID       Revoke a token
  webhook add           Register a webhook endpoint (its secret printed once, on the last line of stdout)
  webhook list          List webhook endpoints (never their secrets)
  webhook remove ID     Remove a webhook endpoint
  webhook deliveries ID Show an endpoint's latest delivery attempts
  export [--out FILE]   Write the whole store as NDJSON (a backup, or a move to another store)
  import FILE           Load an export into the store (SQLite or PostgreSQL)
  backup --out FILE     Copy a SQLite store to FILE, consistently, while the server runs (PostgreSQL: pg_dump)

Options:
  -h, --help            Show this help; "plantstore <command> --help" shows a command's options
  -v, --version         Print plantstore's version

Every command that uses the store says on stderr which one ("using sqlite:/…/plantstore.db"): the CLI and
the server share a store only when they name the same one (DATABASE_URL, default sqlite:./data/plantstore.db,
relative to the working directory).`,
  serve: serveHelp,
  migrate: `Usage: plantstore migrate [--database-url URL]

Applies pending migrations (serve also does this at start). DATABASE_URL is read when the flag is absent.`,
  token: `Usage:
  plantstore token create --user NAME [--scope SCOPE]... [--admin]
                          [--expires-in 30d|12h|15m|90s] [--name LABEL]
  plantstore token list [--json]
  plantstore token revoke ID

  --user NAME         The user who owns the plants this token creates (required)
  --scope SCOPE       ${SCOPES.join(', ')}; repeat for several; default: all of them
  --admin             The token lists every user's plants (so it needs plants:read)
  --expires-in D      Lifetime; default: no expiry
  --name LABEL        A label shown by "token list"
  --json              token list: print a JSON array
  --database-url URL  The store to use; default: DATABASE_URL, else sqlite:./data/plantstore.db,
                      relative to the working directory. Use the server's store: run the command
                      in the server's directory, or give it the server's DATABASE_URL.

The store used is printed on stderr ("using …"). The secret is printed once, alone on the last line of
stdout; only its SHA-256 hash is stored.`,
  webhook: `Usage:
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
queued events: no delivery to it starts afterwards.`,
  backup: `Usage: plantstore backup --out FILE [--force] [--database-url URL]

Copies the SQLite store to FILE with SQLite's online backup API: a consistent copy of everything committed
when the copy began, made while the server keeps serving and writing. The copy is one standalone file,
checked with PRAGMA integrity_check; FILE appears only once it is complete. It holds token hashes and
webhook signing secrets: keep it as safe as the store. Prints the file, its size and its plant count.

  --out FILE          Where the copy goes; its directory must exist
  --force             Replace FILE if it exists (never the store itself)
  --database-url URL  The store to copy; default: DATABASE_URL, else sqlite:./data/plantstore.db

To restore: stop the server, then point DATABASE_URL at the copy, or move the copy over the store file
(removing the old store's -wal and -shm files first). On PostgreSQL use pg_dump and pg_restore (README,
"Backups").`,
  export: `Usage: plantstore export [--out FILE] [--force] [--database-url URL]

  --out FILE          Where to write; default (or -): stdout, which must not be a terminal
  --force             Replace FILE if it exists (a pipe or a device, such as /dev/null, is written into);
                      never the SQLite store itself or its -wal, -shm, -journal or .lock
  --database-url URL  The store to export; default: DATABASE_URL, else sqlite:./data/plantstore.db

Writes every plant (with its owner and exact id), token (its hash; no secret exists), webhook endpoint
(with its signing secret) and pending webhook event, in creation order, from one snapshot: NDJSON with a
header line. FILE appears only once complete and on disk, with mode 0600: it holds webhook secrets, so
keep it as private as the store, and out of version control. The store may serve requests meanwhile.
The summary goes to stderr.
See README "Moving between stores (export and import)".`,
  import: `Usage: plantstore import FILE [--skip-conflicts] [--database-url URL]

  FILE                A file written by "plantstore export"; - reads stdin
  --skip-conflicts    Keep what the store holds where a record's key is stored with other content,
                      and import the rest (default: stop at the first such batch, exit 1)
  --database-url URL  The store to load into (SQLite or PostgreSQL); default: DATABASE_URL, else
                      sqlite:./data/plantstore.db

Loads in batches of 1,000 in file order, each committed on its own, keeping ids, hashes, secrets and
times. A record already stored with the same content is left alone, so importing twice changes nothing
and a failed import can be run again. Stop the SQLite store's server first (an import holds its lock).`,
};

/** Width of `serve --help`: the terminal's when it is narrower, so that nothing wraps mid-column. */
const HELP_WIDTH = 100;

/** Breaks `text` into lines of at most `width` characters, at spaces (a longer word keeps its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

/**
 * Two aligned columns: the flag with its value's kind, then what it does, its environment variable, its
 * default and what it accepts, wrapped within the description column.
 */
function serveHelp(width = Math.min(HELP_WIDTH, process.stdout.isTTY ? process.stdout.columns : HELP_WIDTH)): string {
  const metavar = (o: OptionInfo) => (o.values?.kind === 'integer' ? 'N' : o.values?.kind === 'duration' ? 'DURATION' : 'VALUE');
  const flags = OPTIONS.map((o: OptionInfo) => `--${o.flag} ${metavar(o)}`);
  const column = Math.max(...flags.map((f) => f.length)) + 4; // two spaces of indent, two between columns
  const textWidth = Math.max(30, width - column);
  const rows = OPTIONS.map((o: OptionInfo, i) => {
    const text = [
      ...wrap(o.help, textWidth),
      ...wrap([`env ${o.env}`, `default ${o.default === '' ? '(empty)' : o.default}`, allowedValues(o)].filter(Boolean).join(', '), textWidth),
    ];
    return text.map((line, j) => `${j === 0 ? `  ${flags[i]}`.padEnd(column) : ''.padEnd(column)}${line}`).join('\n');
  });
  return `Usage: plantstore serve [options]

Each option can also be set by the environment variable named under it (env); a flag wins over the
environment. N is a whole number; DURATION is a whole number and s, m, h or d.

${rows.join('\n')}`;
}

const SERVE_FLAGS = Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: 'string' as const }]));

/** The flags' values as far as they can be read from arguments that are refused (to log the refusal as asked). */
function flagsOf(args: string[]): Record<string, string | undefined> {
  try {
    const { values } = parseArgs({ args, options: SERVE_FLAGS, strict: false, allowPositionals: true });
    return Object.fromEntries(Object.entries(values).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  } catch {
    return {};
  }
}

/**
 * The fatal line that ends `serve`: the message alone for what the operator has to fix (a refused
 * setting, a port in use, a store that cannot open), the error with its stack for anything else.
 */
function fatal(logger: Logger, error: unknown, expected: boolean, exitCode: number): LoggedError {
  if (expected) logger.fatal((error as Error).message);
  else logger.fatal({ err: error }, 'start-up failed');
  return new LoggedError(exitCode);
}

/**
 * Everything `serve` writes is a log line in one format (LOG_FORMAT), for whatever reads its output;
 * a refused command line or configuration too, with exit code 2, logged with LOG_FORMAT and LOG_LEVEL
 * when those two are valid themselves (their defaults otherwise). Only --help prints plain text.
 */
async function serveCommand(args: string[]): Promise<void> {
  let config: Config;
  try {
    const { values } = parse(args, SERVE_FLAGS);
    if (values.help) return void console.log(HELP.serve());
    config = loadConfig(Object.fromEntries(OPTIONS.map((o) => [o.flag, values[o.flag] as string | undefined])));
  } catch (error) {
    const settings = loadLogConfig(flagsOf(args));
    const refused = error instanceof OptionError ? new OptionError(error.withHelp('serve')) : error;
    throw fatal(processLogger(settings.logLevel, settings.logFormat), refused, error instanceof UsageError || error instanceof ConfigError, 2);
  }
  const logger = processLogger(config.logLevel, config.logFormat);
  // Loaded here so that token and migrate commands do not pay for loading the HTTP stack.
  const { serve, StartupError } = await import('../server.js');
  try {
    await serve(config, logger);
  } catch (error) {
    throw fatal(logger, error, error instanceof StartupError, 1);
  }
}

async function backupCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, out: { type: 'string' }, force: { type: 'boolean' } });
  if (values.help) return void console.log(HELP.backup);
  if (values.out === undefined || values.out === '') throw new UsageError('backup needs --out FILE');
  const { database } = loadDatabaseConfig(values['database-url']);
  if (database.kind !== 'sqlite') {
    throw new UsageError(
      'backup copies SQLite stores; back up PostgreSQL with its own tools: pg_dump --format=custom --file=plantstore.dump "$DATABASE_URL" ' +
        '(restore with pg_restore; see "Backups" in the README)',
    );
  }
  console.error(`using ${describeStore(database, 'url')}`);
  const { backupSqlite } = await import('../store/sqlite/backup.js');
  const copy = await backupSqlite(database.path, values.out, { force: values.force ?? false });
  if (copy.removedTemporaries.length > 0) {
    console.error(`removed what interrupted backups or exports had left beside ${copy.path}: ${copy.removedTemporaries.join(', ')}`);
  }
  console.log(`Backed up ${describeStore(database, 'url')} to ${copy.path}: ${copy.bytes} bytes, ${copy.plants} plants, integrity_check ok.`);
}

async function migrateCommand(args: string[]): Promise<void> {
  const { values } = parse(args, DATABASE_OPTION);
  if (values.help) return void console.log(HELP.migrate);
  let applied: readonly string[] = [];
  await withStore(
    values['database-url'],
    async (store) => {
      const done = applied.length === 0 ? 'No migrations were pending' : `Applied ${applied.length === 1 ? 'migration' : 'migrations'} ${applied.join(', ')}`;
      console.log(`${done}; the ${store.backend} store is up to date.`);
    },
    { onMigrated: (names) => (applied = names) },
  );
}

async function tokenCreate(args: string[]): Promise<void> {
  const { values } = parse(args, {
    ...DATABASE_OPTION,
    user: { type: 'string' },
    scope: { type: 'string', multiple: true },
    admin: { type: 'boolean' },
    'expires-in': { type: 'string' },
    name: { type: 'string' },
  });
  if (values.help) return void console.log(HELP.token);
  if (values.user === undefined) throw new UsageError('token create needs --user NAME');
  const scopes: Scope[] = (values.scope ?? []).map((s) => {
    if (!isScope(s)) throw new UsageError(`unknown scope "${s}"; scopes are ${SCOPES.join(', ')}`);
    return s;
  });
  const expiresIn = values['expires-in'];
  const expiresInMs = expiresIn === undefined ? undefined : parseDuration(expiresIn);
  if (expiresInMs === null) throw new UsageError(`--expires-in must look like 30d, 12h, 15m or 90s, got "${expiresIn}"`);
  const request = { user: values.user, scopes, admin: values.admin, name: values.name, expiresInMs };
  const { secret, record } = await withStore(values['database-url'], async (store) => {
    const token = newToken(request);
    return { secret: token.secret, record: await store.createToken(token.record).catch(tokenCreateFailure) };
  });
  console.error(
    `Created token ${record.id} for user "${record.user}" (scopes: ${record.scopes.join(' ')}${record.admin ? ', admin' : ''}, ` +
      `expires: ${record.expiresAt?.toISOString() ?? 'never'}).`,
  );
  if (record.admin && !record.scopes.includes('plants:read')) {
    // An admin's only extra power is listing every user's plants, which needs plants:read. The token is
    // still created (it may be meant as a write-only token), but the admin flag is almost surely a mistake.
    console.error('warning: --admin without plants:read: this token cannot list plants, so being admin gives it nothing.');
  }
  console.error('Store it now; it is not shown again:');
  console.log(secret);
}

async function tokenList(args: string[]): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, json: { type: 'boolean' } });
  if (values.help) return void console.log(HELP.token);
  const tokens = await withStore(values['database-url'], (store) => store.listTokens(), { missing: 'there are no tokens to list' });
  if (values.json) {
    const out = tokens.map((t) => ({
      id: t.id, user: t.user, scopes: t.scopes, admin: t.admin, name: t.name, status: status(t),
      createdAt: t.createdAt.toISOString(), expiresAt: t.expiresAt?.toISOString() ?? null, revokedAt: t.revokedAt?.toISOString() ?? null,
    }));
    return void console.log(JSON.stringify(out, null, 2));
  }
  printTable([
    ['ID', 'USER', 'SCOPES', 'ADMIN', 'NAME', 'CREATED', 'EXPIRES', 'STATUS'],
    ...tokens.map((t) => [
      String(t.id), cell(t.user), t.scopes.join(','), t.admin ? 'yes' : 'no', t.name === null ? '-' : cell(t.name),
      t.createdAt.toISOString(), t.expiresAt?.toISOString() ?? 'never', status(t),
    ]),
  ]);
}

async function tokenRevoke(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, DATABASE_OPTION, true);
  if (values.help) return void console.log(HELP.token);
  const [id, ...extra] = positionals;
  if (id === undefined || extra.length > 0 || !/^[1-9]\d*$/.test(id)) throw new UsageError('token revoke needs one token ID (see "token list")');
  // Exactly, or not at all: an id past 2^53 - 1 would round to another token's.
  const exact = parseTokenId(id);
  const revoked = exact !== null && (await withStore(values['database-url'], (store) => store.revokeToken(exact), { missing: 'there is no token to revoke' }));
  if (!revoked) throw new Error(`no active token with ID ${id}${exact === null ? ` (token ids end at ${TOKEN_ID_MAX})` : ''}`);
  console.log(`Revoked token ${id}. Running servers refuse it within ${REVOCATION_WITHIN_MS / 1000} seconds.`);
}

/**
 * A table cell: control characters (a description may hold a line break), invisible format characters
 * and bidirectional controls are shown escaped (\uXXXX), so that one row stays one line and a name
 * stored before user names refused them shows what it holds rather than its characters reordered.
 */
const cell = visibleText;

/** Rows of cells as aligned columns, the first row the header, as `token list` prints them. */
function printTable(rows: string[][]): void {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length))) ?? [];
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd());
}

async function webhookAdd(args: string[]): Promise<void> {
  const { values } = parse(args, {
    ...DATABASE_OPTION,
    user: { type: 'string' },
    url: { type: 'string' },
    all: { type: 'boolean' },
    description: { type: 'string' },
  });
  if (values.help) return void console.log(HELP.webhook);
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

async function webhookList(args: string[]): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, user: { type: 'string' }, json: { type: 'boolean' } });
  if (values.help) return void console.log(HELP.webhook);
  const endpoints = await withStore(values['database-url'], (store) => store.listWebhooks(values.user ?? null), {
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

async function webhookRemove(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, DATABASE_OPTION, true);
  if (values.help) return void console.log(HELP.webhook);
  const id = endpointIdArgument('remove', positionals);
  const removed = await withStore(values['database-url'], (store) => store.deleteWebhook(id, null), { missing: 'there is no webhook endpoint to remove' });
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

async function webhookDeliveries(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { ...DATABASE_OPTION, limit: { type: 'string' }, json: { type: 'boolean' } }, true);
  if (values.help) return void console.log(HELP.webhook);
  const id = endpointIdArgument('deliveries', positionals);
  const limitText = values.limit ?? '50';
  if (!DELIVERIES_LIMIT.test(limitText) || Number(limitText) > 1000) throw new UsageError(`--limit must be a whole number from 1 to 1000, got "${limitText}"`);
  const attempts = await withStore(values['database-url'], (store) => store.listDeliveryAttempts(id, null, Number(limitText)), {
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

async function exportCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, out: { type: 'string' }, force: { type: 'boolean' } });
  if (values.help) return void console.log(HELP.export);
  const out = values.out ?? '-';
  if (out === '') throw new UsageError('--out needs a file name (or - for stdout)');
  if (out === '-' && process.stdout.isTTY) {
    throw new UsageError('export writes the whole store, webhook secrets included, to stdout: redirect it to a file, or give --out FILE');
  }
  const { database } = loadDatabaseConfig(values['database-url']);
  if (database.kind === 'sqlite') {
    // As backup does: renamed over the -wal (or the store, or its lock), the file would take every
    // acknowledged write with it at the next crash. stdout too may have been redirected there.
    const { storeFileProblem } = await import('../store/sqlite/own-files.js');
    const problem = storeFileProblem(out === '-' ? process.stdout.fd : out, database.path);
    if (problem !== undefined) throw new Error(`cannot export to ${out === '-' ? 'stdout' : out}: ${problem}`);
  }
  const { runExport } = await import('../transfer/export.js');
  await withOpenedStore(
    values['database-url'],
    (location, options) => openTransferStore(location, { ...options, importing: false }),
    (store) => runExport(store, out, (line) => console.error(line), { force: values.force ?? false }),
    { mustExist: true },
  );
}

async function importCommand(args: string[]): Promise<void> {
  const { values, positionals } = parse(args, { ...DATABASE_OPTION, 'skip-conflicts': { type: 'boolean' } }, true);
  if (values.help) return void console.log(HELP.import);
  const [path, ...extra] = positionals;
  if (path === undefined || path === '' || extra.length > 0) throw new UsageError('import needs one FILE (written by "plantstore export"; - for stdin)');
  const { openImportFile, readImportHeader, runImport } = await import('../transfer/import.js');
  const file = await openImportFile(path);
  try {
    // Before the store opens: a file that is not an export creates no store.
    const source = await readImportHeader(file.input);
    await withOpenedStore(
      values['database-url'],
      (location, options) => openTransferStore(location, { ...options, importing: true }),
      (store) => runImport(store, file.name, source, { skipConflicts: values['skip-conflicts'] ?? false, log: (line) => console.error(line) }),
    );
  } finally {
    await file.close();
  }
}

const COMMANDS: Record<string, (args: string[]) => Promise<void>> = {
  serve: serveCommand,
  migrate: migrateCommand,
  backup: backupCommand,
  'token create': tokenCreate,
  'token list': tokenList,
  'token revoke': tokenRevoke,
  'webhook add': webhookAdd,
  'webhook list': webhookList,
  'webhook remove': webhookRemove,
  'webhook deliveries': webhookDeliveries,
  export: exportCommand,
  import: importCommand,
};

/** Commands with subcommands ("token create"), each with a help of its own. */
const GROUPS = { token: HELP.token, webhook: HELP.webhook } as const;

/** From package.json, which sits one level above both src/ and dist/. */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

export async function main(argv: string[]): Promise<number> {
  const [first, second, ...rest] = argv;
  let name = '';
  try {
    if (first === '--version' || first === '-v' || first === 'version') {
      console.log(`plantstore ${version()}`);
      return 0;
    }
    if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
      console.log(HELP.main);
      return first === undefined ? 2 : 0;
    }
    const group = first === 'token' || first === 'webhook' ? first : undefined;
    if (group !== undefined && (second === undefined || second === '--help' || second === '-h')) {
      console.log(GROUPS[group]);
      return second === undefined ? 2 : 0;
    }
    name = group === undefined ? first : `${group} ${second}`;
    const command = COMMANDS[name];
    if (!command) throw new UsageError(`unknown command "${name}"\n\n${HELP.main}`);
    await command(group === undefined ? argv.slice(1) : rest);
    return 0;
  } catch (error) {
    if (error instanceof LoggedError) return error.exitCode;
    const usage = error instanceof UsageError || error instanceof ConfigError || error instanceof TokenRequestError;
    console.error(`plantstore: ${error instanceof OptionError ? error.withHelp(name) : (error as Error).message}`);
    return usage ? 2 : 1;
  }
}
