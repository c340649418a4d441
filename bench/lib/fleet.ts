// The servers of scenarios 1 and 2, shared by the list, JWT, metrics and create scenarios: plantstore on
// the small store (SQLite, and PostgreSQL when it runs), the --baseline build on copies of them, and a
// bare server. They run as production would with the features on: metrics (scraped while loaded) and one
// webhook endpoint in the store, another user's (see WEBHOOK_OWNER).
import type { Bench } from './bench.js';
import { answersOf, pageOf } from './requests.js';
import { BENCH_USER } from './seed.js';
import type { Stores } from './stores.js';
import { startBare, startJwks, type System } from './systems.js';

export const LIST_TITLE = '1. GET /plants?limit=20, 10k plants';
export const CREATE_TITLE = '2. POST /plants, unique ids, durable';

export interface Fleet {
  readonly sqlite: System;
  readonly postgres: System | undefined;
  readonly baselineSqlite: System | undefined;
  readonly baselinePostgres: System | undefined;
  /** Answers the very bytes plantstore answers, so only the work behind them differs. */
  readonly bare: System;
  stop(): Promise<void>;
}

export async function startFleet(bench: Bench, stores: Stores): Promise<Fleet> {
  const { small, pgSmall } = stores;
  const baseline = bench.options.baseline;
  const sqlite = await bench.featured('plantstore sqlite', `sqlite:${small}`, 'sqlite-small');
  const postgres = pgSmall ? await bench.featured('plantstore postgres', pgSmall.url, 'pg-small') : undefined;
  const baselineSqlite = baseline !== undefined && (bench.has('list') || bench.has('create'))
    ? await bench.featured('baseline sqlite', `sqlite:${small}.baseline`, 'baseline-sqlite', {}, baseline) : undefined;
  // The same schema as the row above: instances of any version may share a PostgreSQL database.
  const baselinePostgres = baselineSqlite && pgSmall ? await bench.featured('baseline postgres', pgSmall.url, 'baseline-pg', {}, baseline) : undefined;
  // The create is below the counted range.
  const bare = await bench.start(startBare(await answersOf(sqlite.url, stores.smallToken, bench.nextCreateId() - 1)));
  const stop = async () => {
    for (const s of [sqlite, postgres, baselineSqlite, baselinePostgres, bare]) await s?.stop();
  };
  return { sqlite, postgres, baselineSqlite, baselinePostgres, bare, stop };
}

export interface JwtTwin {
  /** plantstore on a copy of the small store, accepting both kinds of token. */
  readonly server: System;
  /** The bench user's JWT. */
  readonly token: string;
  stop(): Promise<void>;
}

/**
 * The same list with a JWT from an identity provider (bench/servers/jwks-server.mjs), on a server that
 * accepts both kinds of token: after the first request, a verified JWT costs a map lookup.
 */
export async function startJwtTwin(bench: Bench, stores: Stores, fleet: Fleet): Promise<JwtTwin> {
  const jwks = await bench.start(startJwks(BENCH_USER, 'plantstore-bench'));
  const server = await bench.featured('plantstore sqlite, JWT', `sqlite:${stores.small}.jwt`, 'sqlite-jwt',
    { JWT_JWKS_URL: jwks.jwksUrl, JWT_AUDIENCE: 'plantstore-bench' });
  const jwtPage = await pageOf(server.url, jwks.token);
  if (jwtPage.status !== 200 || jwtPage.body !== (await pageOf(fleet.sqlite.url, stores.smallToken)).body) {
    throw new Error(`the JWT list does not answer what the opaque-token list does (${jwtPage.status})`);
  }
  const stop = async () => {
    await server.stop();
    await jwks.stop();
  };
  return { server, token: jwks.token, stop };
}
