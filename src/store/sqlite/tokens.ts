import type Database from './driver.js';
import { isBusy, storeError } from './errors.js';
import type { WriteQueue } from './queue.js';
import type { FileState } from './state.js';
import type { SqliteWebhookStatements } from './webhook-statements.js';
import { SqlSecrets } from '../sql/secrets.js';
import type { Statements, TokenRow } from '../sql/statements.js';
import type { TokenDriver } from '../sql/tokens.js';

/** The token statements on SQLite, prepared once: reads at once, writes in the write queue (see sql/tokens.ts). */
export function sqliteTokenDriver(
  db: Database.Database, SQL: Statements, state: FileState, writes: WriteQueue, webhooks: SqliteWebhookStatements,
): TokenDriver {
  const insert = db.prepare<unknown[], TokenRow>(SQL.insertToken);
  const byHash = db.prepare<[string], TokenRow>(SQL.tokenByHash);
  const all = db.prepare<[], TokenRow>(SQL.tokens);
  const ofUser = db.prepare<[string], TokenRow>(SQL.userTokens);
  const revoke = db.prepare<[number, number]>(SQL.revokeToken);
  const revokeOfUser = db.prepare<[number, number, string]>(SQL.revokeUserToken);
  return {
    // On every authenticated request: no closure made per call, one promise, as a read of its own.
    byHash: (hash, map) => {
      let row: TokenRow | undefined;
      try {
        state.assertReadable();
        row = byHash.get(hash);
      } catch (error) {
        return Promise.reject(storeError(error));
      }
      return Promise.resolve(map(row));
    },
    list: (user, map) => {
      try {
        return Promise.resolve(map(state.read(() => (user === undefined ? all.all() : ofUser.all(user)))));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    insert: (values) => writes.add(() => insert.get(values)),
    revoke: (id, user) => writes.add(() => {
      const now = Date.now();
      const revoked = (user === undefined ? revoke.run(now, id) : revokeOfUser.run(now, id, user)).changes === 1;
      // In the same transaction (see TokenDriver.revoke).
      if (revoked) webhooks.withdrawForToken(id, now);
      return revoked;
    }),
  };
}

/** The cursor key's upsert (see SqlSecrets), prepared when first asked: once per handle. */
export function sqliteSecrets(db: Database.Database, writes: WriteQueue): SqlSecrets {
  return new SqlSecrets(async (key) => {
    // One statement, whoever comes first: the no-op update makes RETURNING give the stored key.
    const upsert = db.prepare<[string, Buffer, number], { value: Buffer }>(
      `INSERT INTO server_secrets (name, value, created_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING value`,
    );
    const run = () => upsert.get('cursor', key, Date.now())?.value;
    try {
      return run();
    } catch (error) {
      // The write lock, held for a moment by another connection (the checkpoint thread's FULL step, a
      // CLI command): waited for in the write queue, as every write, rather than failing with 503.
      if (!isBusy(error)) throw storeError(error);
      return writes.add(run);
    }
  });
}
