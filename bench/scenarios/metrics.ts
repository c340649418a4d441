// The metrics scenario: scenarios 1 and 2 with metrics off and on. The servers of the fleet have metrics
// on and are scraped while loaded; the same servers with metrics off run against them, PostgreSQL's
// on the same schema, as the baseline's does.
import { present, type Bench, type Kind, type Row, type Target } from '../lib/bench.js';
import { CREATE_TITLE, LIST_TITLE, type Fleet } from '../lib/fleet.js';
import type { Stores } from '../lib/stores.js';

const vsOff = (on: Target | undefined, off: Target | undefined): Row[] =>
  (on && off ? [{ scenario: '', target: on, reference: off, referenceName: 'off', goal: 0.95 }] : []);

export async function metrics(bench: Bench, stores: Stores, fleet: Fleet): Promise<void> {
  const { small, smallToken, pgSmall } = stores;
  const sqliteOff = await bench.startServer('plantstore sqlite, metrics off', `sqlite:${small}.metrics`, 'sqlite-metrics-off');
  const postgresOff = pgSmall ? await bench.startServer('plantstore postgres, metrics off', pgSmall.url, 'pg-metrics-off') : undefined;
  const pair = (kind: Kind) => ({
    sqlite: { off: bench.target(sqliteOff, kind, smallToken), on: bench.target(fleet.sqlite, kind, smallToken) },
    postgres: postgresOff && fleet.postgres && pgSmall
      ? { off: bench.target(postgresOff, kind, pgSmall.token), on: bench.target(fleet.postgres, kind, pgSmall.token) } : undefined,
  });
  const m1 = pair('list');
  const m2 = pair('create');
  await bench.rounds(`${LIST_TITLE} (metrics off and on)`, present(m1.sqlite.off, m1.sqlite.on, m1.postgres?.off, m1.postgres?.on));
  await bench.rounds(`${CREATE_TITLE} (metrics off and on)`, present(m2.sqlite.off, m2.sqlite.on, m2.postgres?.off, m2.postgres?.on));
  bench.report.rows.push(
    { scenario: `${LIST_TITLE}, metrics off/on`, target: m1.sqlite.off }, ...vsOff(m1.sqlite.on, m1.sqlite.off),
    ...(m1.postgres ? [{ scenario: '', target: m1.postgres.off }, ...vsOff(m1.postgres.on, m1.postgres.off)] : []),
    { scenario: `${CREATE_TITLE}, metrics off/on`, target: m2.sqlite.off }, ...vsOff(m2.sqlite.on, m2.sqlite.off),
    ...(m2.postgres ? [{ scenario: '', target: m2.postgres.off }, ...vsOff(m2.postgres.on, m2.postgres.off)] : []),
  );
  bench.report.durability.push(['sqlite, metrics off', m2.sqlite.off, `sqlite:${small}.metrics`], ['sqlite, metrics on', m2.sqlite.on, `sqlite:${small}`]);
  if (m2.postgres && pgSmall) {
    bench.report.durability.push(['postgres, metrics off', m2.postgres.off, pgSmall.url], ['postgres, metrics on', m2.postgres.on, pgSmall.url]);
  }
  await sqliteOff.stop();
  await postgresOff?.stop();
}
