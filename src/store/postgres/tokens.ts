import { withdrawEvents } from '../sql/all-users.js';
import { param, POSTGRES, render, sql } from '../sql/dialect.js';
import { SqlSecrets } from '../sql/secrets.js';
import type { Statements, TokenRow } from '../sql/statements.js';
import type { TokenDriver } from '../sql/tokens.js';
import type { Connections } from './pool.js';

/** The token statements on PostgreSQL, one pooled statement each (see sql/tokens.ts). */
export function postgresTokenDriver(SQL: Statements, connections: Connections): TokenDriver {
  // Its user's all-users endpoints may have lost their reach (see TokenDriver.revoke).
  const withdraw = render(POSTGRES, withdrawEvents(POSTGRES, sql`(SELECT username FROM tokens WHERE id = ${param('token')})`));
  return {
    byHash: (hash, map) => connections.query<TokenRow>('token_by_hash', SQL.tokenByHash, [hash]).then(({ rows }) => map(rows[0])),
    list: (user, map) => (user === undefined
      ? connections.query<TokenRow>('token_list', SQL.tokens, [])
      : connections.query<TokenRow>('token_list_user', SQL.userTokens, [user])).then(({ rows }) => map(rows)),
    insert: async (values) => (await connections.query<TokenRow>('token_insert', SQL.insertToken, values)).rows[0],
    revoke: async (id, user) => {
      const now = new Date();
      const res = user === undefined
        ? await connections.query('token_revoke', SQL.revokeToken, [now, id])
        : await connections.query('token_revoke_user', SQL.revokeUserToken, [now, id, user]);
      // The revocation stands even if this fails: the dispatcher's next sweep withdraws the same events.
      if (res.rowCount === 1) await connections.query('webhook_withdraw_user', withdraw.text, withdraw.values({ token: id })).catch(() => undefined);
      return res.rowCount === 1;
    },
  };
}

/**
 * The cursor key's upsert. Instances starting together race here: ON CONFLICT DO UPDATE waits for the
 * first insert to commit and returns its key to all (DO NOTHING would return no row to the others). The
 * no-op update writes a row version once per instance start.
 */
export function postgresSecrets(connections: Connections): SqlSecrets {
  return new SqlSecrets(async (key) => {
    const { rows } = await connections.query<{ value: Buffer }>(
      'cursor_key',
      `INSERT INTO server_secrets (name, value) VALUES ('cursor', $1)
       ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING value`,
      [key],
    );
    return rows[0]?.value;
  });
}
