import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppOptions } from '../src/app.js';
import type { Scope } from '../src/domain/principal.js';
import { openStore } from '../src/store/open.js';
import type { Store } from '../src/store/store.js';
import { issueToken } from '../src/tokens.js';

export interface TestStore {
  readonly store: Store;
  /** The DATABASE_URL of this store, for child processes and second handles. */
  readonly databaseUrl: string;
  /** Opens another, independent handle on the same database (a restart, another process). */
  reopen(): Promise<Store>;
}

/** A fresh store for one test, removed when the test ends. */
export async function testStore(t: TestContext): Promise<TestStore> {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-test-'));
  const path = join(dir, 'plantstore.db');
  const handles: Store[] = [];
  const open = async () => {
    const store = await openStore({ kind: 'sqlite', path });
    handles.push(store);
    return store;
  };
  const store = await open();
  t.after(async () => {
    for (const h of handles) await h.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, databaseUrl: `sqlite:${path}`, reopen: open };
}

export interface TokenOptions {
  scopes?: Scope[];
  admin?: boolean;
  expiresInMs?: number;
}

export interface TestApp extends TestStore {
  readonly app: FastifyInstance;
  /** Issues a token the way `plantstore token create` does and returns its secret. */
  token(user: string, options?: TokenOptions): Promise<string>;
}

export async function testApp(t: TestContext, options: Omit<AppOptions, 'store'> = {}): Promise<TestApp> {
  const ts = await testStore(t);
  const app = await buildApp({ logLevel: options.logStream ? 'info' : 'silent', ...options, store: ts.store });
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
