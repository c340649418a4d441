import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import type { DestinationStream } from 'pino';
import { buildApp, type AppOptions } from '../../src/app.js';
import { parseDatabaseUrl, type DatabaseConfig } from '../../src/config/database.js';
import type { Scope } from '../../src/domain/principal.js';
import { createLogger } from '../../src/logger.js';
import { openStore } from '../../src/store/open.js';
import Database from '../../src/store/sqlite/driver.js';
import type { Store } from '../../src/store/store.js';
import { sharedSchemaCompilers } from './compilers.js';
import { issueToken } from './tokens.js';

/**
 * The backend every test runs against: PostgreSQL when PLANTSTORE_TEST_DATABASE_URL names one (each test
 * then gets its own schema in that database), else SQLite (each test gets its own file). `npm test` runs
 * the suite once per backend.
 */
export const POSTGRES_URL = process.env.PLANTSTORE_TEST_DATABASE_URL;
export const BACKEND: 'sqlite' | 'postgres' = POSTGRES_URL ? 'postgres' : 'sqlite';

/** How long a test store lets an operation wait (a held lock) before answering 503. */
export const TEST_QUERY_TIMEOUT_MS = 1000;

export const silentLogger = createLogger('silent');

/** Runs statements on a PostgreSQL database outside any store (schemas, locks, outages). */
export async function adminSql(url: string, ...statements: string[]): Promise<pg.QueryResult[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const results = [];
    for (const s of statements) results.push(await client.query(s));
    return results;
  } finally {
    await client.end();
  }
}

/** `url` with its search_path set to `schema`, so the store's tables live there. */
function withSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

export interface TestDatabase {
  readonly url: string;
  readonly config: DatabaseConfig;
  /** Runs one SQL statement directly on the database, bypassing the store. */
  sql(statement: string): Promise<void>;
  /**
   * Holds a write lock from another connection until the returned function is called: the way another
   * process can make the store unable to write for a while.
   */
  holdWriteLock(): Promise<() => Promise<void>>;
}

/** A fresh, empty database for one test, removed when the test ends. */
export async function testDatabase(t: TestContext): Promise<TestDatabase> {
  if (POSTGRES_URL) {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    await adminSql(POSTGRES_URL, `CREATE SCHEMA ${schema}`);
    t.after(() => adminSql(POSTGRES_URL, `DROP SCHEMA ${schema} CASCADE`).then(() => undefined));
    const url = withSchema(POSTGRES_URL, schema);
    return {
      url,
      config: parseDatabaseUrl(url, process.cwd()),
      sql: (statement) => adminSql(url, statement).then(() => undefined),
      async holdWriteLock() {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query('BEGIN');
        await client.query('LOCK TABLE plants IN EXCLUSIVE MODE');
        return async () => {
          await client.query('ROLLBACK');
          await client.end();
        };
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'plantstore.db');
  const url = `sqlite:${path}`;
  const raw = () => new Database(path);
  return {
    url,
    config: parseDatabaseUrl(url, process.cwd()),
    async sql(statement) {
      const db = raw();
      db.exec(statement);
      db.close();
    },
    async holdWriteLock() {
      const db = raw();
      db.exec('BEGIN EXCLUSIVE');
      return async () => {
        db.exec('ROLLBACK');
        db.close();
      };
    },
  };
}

export interface TestStore extends TestDatabase {
  readonly store: Store;
  /** Opens another, independent handle on the same database, as the CLI (or, on PostgreSQL, another instance) does. */
  reopen(): Promise<Store>;
}

/** `queryTimeoutMs`: for a test whose requests each wait out a held lock one after another. */
export async function testStore(t: TestContext, { queryTimeoutMs = TEST_QUERY_TIMEOUT_MS } = {}): Promise<TestStore> {
  const db = await testDatabase(t);
  const handles: Store[] = [];
  const open = async (server: boolean) => {
    const store = await openStore(db.config, {
      logger: silentLogger,
      poolSize: 5,
      startupTimeoutMs: 5000,
      queryTimeoutMs,
      listCachePlants: 100_000, // as in production, so every list test also checks the cache's invalidation
      server,
    });
    handles.push(store);
    return store;
  };
  // The first handle is the server's (on SQLite: the server lock and the page cache); later ones are
  // opened as the CLI or another process would.
  const store = await open(true);
  t.after(async () => {
    for (const h of handles) await h.close();
  });
  return { ...db, store, reopen: () => open(false) };
}

export interface TokenOptions {
  scopes?: Scope[];
  admin?: boolean;
  expiresInMs?: number;
}

/** Every app of this file (this process) shares Fastify's schema builders: see compilers.ts. */
const SCHEMA_COMPILERS = sharedSchemaCompilers();

export interface TestApp extends TestStore {
  readonly app: FastifyInstance;
  /** Issues a token the way `plantstore token create` does and returns its secret. */
  token(user: string, options?: TokenOptions): Promise<string>;
}

export interface TestAppOptions extends Omit<AppOptions, 'store' | 'logger'> {
  /** Receives the app's JSON log lines (info and up); without it the app logs nothing. */
  readonly logStream?: DestinationStream;
  /** The store's lock timeout (testStore's), for its own store only. */
  readonly queryTimeoutMs?: number;
}

/** An app on a store of its own; `store` lets a test build another app on an existing store. */
export async function testApp(t: TestContext, { logStream, queryTimeoutMs, ...options }: TestAppOptions = {}, existing?: TestStore): Promise<TestApp> {
  const ts = existing ?? (await testStore(t, { queryTimeoutMs }));
  const logger = logStream ? createLogger('info', logStream) : silentLogger;
  const app = await buildApp({ schemaCompilers: SCHEMA_COMPILERS, ...options, logger, store: ts.store });
  t.after(() => app.close());
  const token = async (user: string, o: TokenOptions = {}) => (await issueToken(ts.store, { user, ...o })).secret;
  return { ...ts, app, token };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** POST /plants with a raw JSON text, so tests control every byte (numbers past 2^53 included). */
export function create(app: FastifyInstance, token: string, json: string | object): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/plants',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    payload: typeof json === 'string' ? json : JSON.stringify(json),
  });
}

export function list(app: FastifyInstance, token: string, query = ''): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'GET', url: `/plants${query}`, headers: bearer(token) });
}

/** Follows Link rel="next" from `first` until the last page; returns every page's body. */
export async function allPages(app: FastifyInstance, token: string, first: string): Promise<unknown[][]> {
  const pages: unknown[][] = [];
  let url: string | undefined = first;
  while (url !== undefined) {
    const res = await app.inject({ method: 'GET', url, headers: bearer(token) });
    if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}: ${res.body}`);
    pages.push(res.json());
    url = nextUrl(res.headers.link);
  }
  return pages;
}

export function nextUrl(link: unknown): string | undefined {
  if (typeof link !== 'string') return undefined;
  return /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
}

/** Three owners' plants as real traffic creates them, interleaved: plant i is alice's, bob's or carol's by i mod 3, and tagged `x` when i is a multiple of 5. */
export async function createInterleaved(store: Store, count = 90): Promise<void> {
  for (let i = 1; i <= count; i++) {
    const outcome = await store.plants.createPlant(['alice', 'bob', 'carol'][i % 3] as string, { id: BigInt(i), name: `plant ${i}`, ...(i % 5 === 0 ? { tag: 'x' } : {}) });
    assert.equal(outcome, 'created');
  }
}

/** Every page of one listing, read from the store itself 4 plants at a time, each as its JSON text. */
async function storePages(store: Store, owner: string | null, tag: string | undefined): Promise<string[]> {
  const pages: string[] = [];
  for (let after = 0; ; ) {
    const page = await store.plants.listPlants({ owner, tag, after, limit: 4 });
    pages.push(JSON.stringify(page.plants));
    if (page.next === null) return pages;
    after = page.next;
  }
}

/** Both stores hold createInterleaved's plants: every listing shape pages through them alike on both, in more than one page. */
export async function assertSamePages(store: Store, expected: Store): Promise<void> {
  for (const [owner, tag] of [[null, undefined], [null, 'x'], ['alice', undefined], ['bob', 'x']] as const) {
    const pages = await storePages(store, owner, tag);
    assert.ok(pages.length > 1, `more than one page: ${pages.join(' / ')}`);
    assert.deepEqual(pages, await storePages(expected, owner, tag), `${owner ?? 'every owner'}, ${tag ?? 'no tag'}`);
  }
}

/** The answer is `status` with an Error body of `code` (and a message matching `message`, when given). */
export function assertError(res: LightMyRequestResponse, status: number, code: number, message?: RegExp): void {
  assert.equal(res.statusCode, status, res.body);
  const body = errorBody(res);
  assert.equal(body.error, code, res.body);
  if (message) assert.match(body.message, message);
}

/** Asserts the Error body shape and returns it. */
export function errorBody(res: LightMyRequestResponse): { error: number; message: string } {
  const body = res.json() as Record<string, unknown>;
  if (!String(res.headers['content-type']).startsWith('application/json')) {
    throw new Error(`error response content-type is ${String(res.headers['content-type'])}`);
  }
  const keys = Object.keys(body).sort().join(',');
  if (keys !== 'error,message' || !Number.isInteger(body.error) || typeof body.message !== 'string') {
    throw new Error(`not an Error body: ${res.body}`);
  }
  return body as { error: number; message: string };
}
