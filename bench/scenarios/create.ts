// Scenario 2: creates with unique ids, each answered only once it is durable, against a bare server
// answering the same bytes; plantstore on SQLite and PostgreSQL, the --baseline build, and json-server.
// Every create answered 2xx is looked for in the store afterwards.
import { present, type Bench, type Row, type Target } from '../lib/bench.js';
import { CREATE_TITLE, type Fleet } from '../lib/fleet.js';
import type { Stores } from '../lib/stores.js';
import { startJsonServer } from '../lib/systems.js';

export async function create(bench: Bench, stores: Stores, fleet: Fleet): Promise<void> {
  const { small, smallToken, pgSmall } = stores;
  const jsonServer = await bench.start(startJsonServer(stores.jsonServerDb));
  const t = {
    bare: bench.target(fleet.bare, 'create'),
    sqlite: bench.target(fleet.sqlite, 'create', smallToken),
    postgres: fleet.postgres && pgSmall ? bench.target(fleet.postgres, 'create', pgSmall.token) : undefined,
    json: bench.target(jsonServer, 'create'),
  };
  const baseline = {
    sqlite: fleet.baselineSqlite ? bench.target(fleet.baselineSqlite, 'create', smallToken) : undefined,
    postgres: fleet.baselinePostgres && pgSmall ? bench.target(fleet.baselinePostgres, 'create', pgSmall.token) : undefined,
  };
  const baselines = present(baseline.sqlite, baseline.postgres);
  await bench.rounds(CREATE_TITLE, present(t.bare, t.sqlite, t.postgres, ...baselines, t.json));
  const vsBare = (target: Target): Row => ({ scenario: '', target, reference: t.bare, referenceName: 'bare' });
  bench.report.rows.push(
    { scenario: CREATE_TITLE, target: t.bare },
    { ...vsBare(t.sqlite), goal: 0.65, p99Goal: true },
    ...(t.postgres ? [{ ...vsBare(t.postgres), goal: 0.5, p99Goal: true }] : []),
    ...baselines.map(vsBare),
    vsBare(t.json),
  );
  const durability = bench.report.durability;
  durability.push(['sqlite', t.sqlite, `sqlite:${small}`]);
  if (t.postgres && pgSmall) durability.push(['postgres', t.postgres, pgSmall.url]);
  if (baseline.sqlite) durability.push(['baseline sqlite', baseline.sqlite, `sqlite:${small}.baseline`]);
  if (baseline.postgres && pgSmall) durability.push(['baseline postgres', baseline.postgres, pgSmall.url]);
  await jsonServer.stop();
}
