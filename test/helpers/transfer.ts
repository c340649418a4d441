import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { DatabaseConfig } from '../../src/config/database.js';
import { openStore, openTransferStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { exportStore, type ExportSummary } from '../../src/transfer/export.js';
import { importStore, type ImportSummary } from '../../src/transfer/import.js';
import { fileSink } from '../../src/transfer/sink.js';
import { eventually } from './eventually.js';
import { issueToken } from './tokens.js';
import { allPages, bearer, create, silentLogger } from './app.js';

/** A directory removed when the test ends. */
export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-transfer-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const OPEN = { logger: silentLogger, poolSize: 2, startupTimeoutMs: 5000 };

/** Exports the store at `config` to `path`, through a handle of its own as the CLI opens it. */
export async function exportTo(config: DatabaseConfig, path: string): Promise<ExportSummary> {
  const store = await openTransferStore(config, { ...OPEN, importing: false });
  try {
    return await exportStore(store, await fileSink(path, { cwd: process.cwd() }));
  } finally {
    await store.close();
  }
}

export async function importFrom(config: DatabaseConfig, path: string, skipConflicts = false, log: string[] = []): Promise<ImportSummary> {
  const store = await openTransferStore(config, { ...OPEN, importing: true });
  try {
    return await importStore(store, [readFileSync(path)], { skipConflicts, log: (line) => log.push(line) });
  } finally {
    await store.close();
  }
}

/** The lines after the header: what two exports of the same content share. */
export const records = (path: string) => readFileSync(path, 'utf8').split('\n').slice(1).join('\n');

/** An app serving the store at `config`, opened as a server opens it. */
export async function appOn(t: TestContext, config: DatabaseConfig, options: { webhookAllowPrivate?: boolean } = {}): Promise<{ app: FastifyInstance; store: Store }> {
  const store = await openStore(config, { ...OPEN, server: true, listCachePlants: 1000 });
  const app = await buildApp({ logger: silentLogger, store, ...options });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  return { app, store };
}

/** Every int64 edge, and 2^53 ± 1 where a double would round. */
export const EDGE_IDS = ['9223372036854775807', '-9223372036854775808', '9007199254740993', '9007199254740991', '9007199254740992', '0', '-1'];

/** Strings a careless encoding would change: astral, combining, right-to-left, separators, quotes, escapes, controls. */
export const EDGE_NAMES = [
  '🌵𝒳 astral', 'e\u0301 combining', 'שלום عربي rtl', 'a\u2028b\u2029c', '"quoted" \\ back\\"slash', 'tab\tnew\nline\u0001\u001f\u007f',
  '🌿'.repeat(200), 'x', '\u00a0 nbsp \ufeff bom', '</script><!--',
];
export const EDGE_TAGS: Array<string | undefined> = [undefined, '', 'indoor', '🪴'.repeat(100), 'tag "q" \\', undefined, 'a\u2028b'];

/** Creates each edge plant for `token` through the API; ids as written (exact past 2^53). */
export async function createEdgePlants(app: FastifyInstance, token: string, salt = ''): Promise<void> {
  const salted = (name: string) => ([...name + salt].length > 200 ? name : name + salt);
  let i = 0;
  for (const id of EDGE_IDS) {
    for (const name of [EDGE_NAMES[i % EDGE_NAMES.length] as string]) {
      const tag = EDGE_TAGS[i % EDGE_TAGS.length];
      const json = `{"id":${id},"name":${JSON.stringify(salted(name))}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`;
      const res = await create(app, token, json);
      assert.equal(res.statusCode, 200, res.body);
      i++;
    }
  }
  for (; i < EDGE_NAMES.length + 3; i++) {
    const tag = EDGE_TAGS[i % EDGE_TAGS.length];
    const json = `{"id":${1000 + i},"name":${JSON.stringify(salted(EDGE_NAMES[i % EDGE_NAMES.length] as string))}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`;
    assert.equal((await create(app, token, json)).statusCode, 200);
  }
}

/**
 * What the API shows of a store, as raw bodies: every user's plants and the admin's listing of all of
 * them, paged two at a time and filtered by a tag, the admin's token list and webhook list.
 */
export async function apiView(app: FastifyInstance, admin: string, users: readonly string[]): Promise<Record<string, unknown>> {
  const view: Record<string, unknown> = {};
  for (const [who, token] of [['admin', admin], ...users.map((u, i) => [`user${i}`, u])] as Array<[string, string]>) {
    view[`${who} plants`] = await allPages(app, token, '/plants?limit=2');
    view[`${who} indoor`] = await allPages(app, token, '/plants?limit=3&tag=indoor');
    view[`${who} empty tag`] = await allPages(app, token, '/plants?limit=50&tag=');
  }
  for (const url of ['/tokens', '/webhooks']) {
    const res = await app.inject({ method: 'GET', url, headers: bearer(admin) });
    assert.equal(res.statusCode, 200, res.body);
    view[url] = res.body;
  }
  return view;
}

const register = (app: FastifyInstance, token: string, body: object) =>
  app.inject({ method: 'POST', url: '/webhooks', headers: { ...bearer(token), 'content-type': 'application/json' }, payload: JSON.stringify(body) });

/**
 * A store with every edge the move must keep: the edge plants of two users, an admin, a token that
 * expires later, a revoked and an expired one, an endpoint of one user and one for all users (so every
 * plant queued events), and one event claimed (it moves as due). The app must allow private webhooks.
 */
export async function seedEdgeStore(app: FastifyInstance, store: Store) {
  const token = async (user: string, options: { admin?: boolean; expiresInMs?: number } = {}) => (await issueToken(store, { user, ...options })).secret;
  const admin = await token('root', { admin: true });
  const alice = await token('alice');
  const bob = await token('bob', { expiresInMs: 86_400_000 });
  const revoked = await token('carol');
  const expired = await token('dave', { expiresInMs: 1 });
  const daveIssued = Date.now();
  const carol = (await store.tokens.listTokens('carol'))[0]?.id as number;
  assert.ok(await store.tokens.revokeToken(carol));
  assert.equal((await register(app, alice, { url: 'http://127.0.0.1:9/alice', description: 'garden \u2028 sync 🌱' })).statusCode, 201);
  assert.equal((await register(app, admin, { url: 'http://127.0.0.1:9/all' })).statusCode, 201);
  await createEdgePlants(app, alice);
  await createEdgePlants(app, bob, ' (bob)');
  const claimed = await store.outbox.claimDeliveries({ instance: 'i1', limit: 1, perEndpoint: 1, busy: [], leaseMs: 3_600_000 });
  assert.equal(claimed.length, 1);
  // dave's token has expired: it was issued before daveIssued, for 1 ms.
  await eventually(() => (Date.now() > daveIssued + 1 ? true : undefined), 'dave\'s token to expire');
  return { admin, alice, bob, revoked, expired, claimedEventId: claimed[0]?.eventId as string };
}
