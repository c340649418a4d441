// Scenario 1: the bench user's first page of 20 plants from a store of 10k, against a bare server
// answering the same bytes; plantstore with an opaque token, with a JWT, with the page cache off, on
// PostgreSQL, the --baseline build, and json-server, the mock users pick today.
import { present, type Bench, type Row, type Target } from '../lib/bench.js';
import { LIST_TITLE, startJwtTwin, type Fleet } from '../lib/fleet.js';
import type { Stores } from '../lib/stores.js';
import { startJsonServer } from '../lib/systems.js';

export async function list(bench: Bench, stores: Stores, fleet: Fleet): Promise<void> {
  const { small, smallToken, pgSmall } = stores;
  const twin = await startJwtTwin(bench, stores, fleet);
  // The same store with the page cache off: the cost of a query per request.
  const noCache = await bench.featured('plantstore sqlite, no cache', `sqlite:${small}.nocache`, 'sqlite-small-nc', { LIST_CACHE_PLANTS: '0' });
  const jsonServer = await bench.start(startJsonServer(stores.jsonServerDb));
  const t = {
    bare: bench.target(fleet.bare, 'list'),
    sqlite: bench.target(fleet.sqlite, 'list', smallToken),
    sqliteJwt: bench.target(twin.server, 'list', twin.token),
    sqliteNoCache: bench.target(noCache, 'list', smallToken),
    postgres: fleet.postgres && pgSmall ? bench.target(fleet.postgres, 'list', pgSmall.token) : undefined,
    json: bench.target(jsonServer, 'list', undefined, '/plants?_limit=20'),
  };
  const baselines = present(
    fleet.baselineSqlite && bench.target(fleet.baselineSqlite, 'list', smallToken),
    fleet.baselinePostgres && pgSmall && bench.target(fleet.baselinePostgres, 'list', pgSmall.token),
  );
  await bench.rounds(LIST_TITLE, present(t.bare, t.sqlite, t.sqliteJwt, t.sqliteNoCache, t.postgres, ...baselines, t.json));
  const vsBare = (target: Target): Row => ({ scenario: '', target, reference: t.bare, referenceName: 'bare' });
  bench.report.rows.push(
    { scenario: LIST_TITLE, target: t.bare },
    { ...vsBare(t.sqlite), goal: 0.6, p99Goal: true },
    { scenario: '', target: t.sqliteJwt, reference: t.sqlite, referenceName: 'opaque', goal: 0.95 },
    vsBare(t.sqliteNoCache),
    ...(t.postgres ? [{ ...vsBare(t.postgres), goal: 0.3, p99Goal: true }] : []),
    ...baselines.map(vsBare),
    vsBare(t.json),
  );
  await noCache.stop();
  await jsonServer.stop();
  await twin.stop();
}
