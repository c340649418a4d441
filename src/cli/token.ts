import { isScope, SCOPES, type Scope } from '../domain/principal.js';
import { DURATION_RULE, parseDuration } from '../domain/duration.js';
import { newToken, parseTokenId, REVOCATION_WITHIN_MS, TOKEN_ID_MAX, tokenCreateFailure, tokenStatus as status, tokenView } from '../domain/token.js';
import { parse, UsageError } from './args.js';
import { DATABASE_OPTION, withStore } from './store.js';
import { cell, printTable } from './table.js';
import type { Cli } from './io.js';

export const TOKEN_HELP = `Usage:
  plantstore token create --user NAME [--scope SCOPE]... [--admin]
                          [--expires-in 30d|12h|15m|90s] [--name LABEL]
  plantstore token list [--json]
  plantstore token revoke ID

  --user NAME         The user who owns the plants this token creates (required)
  --scope SCOPE       ${SCOPES.join(', ')}; repeat for several; default: all of them
  --admin             The token lists every user's plants (so it needs plants:read)
  --expires-in D      Lifetime (0, or 0s: expired from the start, to try a client's handling);
                      default: no expiry
  --name LABEL        A label shown by "token list"
  --json              token list: print a JSON array
  --database-url URL  The store to use; default: DATABASE_URL, else sqlite:./data/plantstore.db,
                      relative to the working directory. Use the server's store: run the command
                      in the server's directory, or give it the server's DATABASE_URL.
  --config FILE       Read DATABASE_URL (and any other setting) from FILE, KEY=value lines, as the
                      server does; also PLANTSTORE_CONFIG=FILE. A flag or variable wins over it.

The store used is printed on stderr ("using …"). The secret is printed once, alone on the last line of
stdout; only its SHA-256 hash is stored.`;

export async function tokenCreate(args: string[], cli: Cli): Promise<void> {
  const { values } = parse(args, {
    ...DATABASE_OPTION,
    user: { type: 'string' },
    scope: { type: 'string', multiple: true },
    admin: { type: 'boolean' },
    'expires-in': { type: 'string' },
    name: { type: 'string' },
  });
  if (values.help) return void cli.print(TOKEN_HELP);
  if (values.user === undefined) throw new UsageError('token create needs --user NAME');
  const scopes: Scope[] = (values.scope ?? []).map((s) => {
    if (!isScope(s)) throw new UsageError(`unknown scope "${s}"; scopes are ${SCOPES.join(', ')}`);
    return s;
  });
  const expiresIn = values['expires-in'];
  const expiresInMs = expiresIn === undefined ? undefined : parseDuration(expiresIn);
  if (expiresInMs === null) throw new UsageError(`--expires-in ${DURATION_RULE}, got "${expiresIn}"`);
  const request = { user: values.user, scopes, admin: values.admin, name: values.name, expiresInMs };
  const { secret, record } = await withStore(cli, values['database-url'], async (store) => {
    const token = newToken(request);
    return { secret: token.secret, record: await store.tokens.createToken(token.record).catch(tokenCreateFailure) };
  });
  cli.warn(
    `Created token ${record.id} for user "${record.user}" (scopes: ${record.scopes.join(' ')}${record.admin ? ', admin' : ''}, ` +
      `expires: ${record.expiresAt?.toISOString() ?? 'never'}).`,
  );
  if (record.admin && !record.scopes.includes('plants:read')) {
    // An admin's only extra power is listing every user's plants, which needs plants:read. The token is
    // still created (it may be meant as a write-only token), but the admin flag is almost surely a mistake.
    cli.warn('warning: --admin without plants:read: this token cannot list plants, so being admin gives it nothing.');
  }
  cli.warn('Store it now; it is not shown again:');
  cli.print(secret);
}

export async function tokenList(args: string[], cli: Cli): Promise<void> {
  const { values } = parse(args, { ...DATABASE_OPTION, json: { type: 'boolean' } });
  if (values.help) return void cli.print(TOKEN_HELP);
  const tokens = await withStore(cli, values['database-url'], (store) => store.tokens.listTokens(), { missing: 'there are no tokens to list' });
  if (values.json) {
    // GET /tokens' view: a field without a value (name, expiresAt, revokedAt) is left out, never null.
    const now = Date.now();
    return void cli.print(JSON.stringify(tokens.map((t) => tokenView(t, now)), null, 2));
  }
  printTable(cli, [
    ['ID', 'USER', 'SCOPES', 'ADMIN', 'NAME', 'CREATED', 'EXPIRES', 'STATUS'],
    ...tokens.map((t) => [
      String(t.id), cell(t.user), t.scopes.join(','), t.admin ? 'yes' : 'no', t.name === null ? '-' : cell(t.name),
      t.createdAt.toISOString(), t.expiresAt?.toISOString() ?? 'never', status(t),
    ]),
  ]);
}

export async function tokenRevoke(args: string[], cli: Cli): Promise<void> {
  const { values, positionals } = parse(args, DATABASE_OPTION, true);
  if (values.help) return void cli.print(TOKEN_HELP);
  const [id, ...extra] = positionals;
  if (id === undefined || extra.length > 0 || !/^[1-9]\d*$/.test(id)) throw new UsageError('token revoke needs one token ID (see "token list")');
  // Exactly, or not at all: an id past 2^53 - 1 would round to another token's.
  const exact = parseTokenId(id);
  const revoked = exact !== null && (await withStore(cli, values['database-url'], (store) => store.tokens.revokeToken(exact), { missing: 'there is no token to revoke' }));
  if (!revoked) throw new Error(`no active token with ID ${id}${exact === null ? ` (token ids end at ${TOKEN_ID_MAX})` : ''}`);
  cli.print(`Revoked token ${id}. Running servers refuse it within ${REVOCATION_WITHIN_MS / 1000} seconds.`);
}
