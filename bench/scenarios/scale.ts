// Scenario 3: the list of scenario 1 on a store of 1M plants against one of 10k. It compares store sizes
// with processes of the same history: all started fresh here (a process that served scenario 1 for
// minutes is warmer than one that has not), with the cache on and off, the latter showing that the
// indexes keep a query's cost flat as the store grows. Default settings: no metrics, no webhook endpoint
// (lists never touch either).
import type { Bench } from '../lib/bench.js';
import type { Stores } from '../lib/stores.js';

const TITLE = '3. the same on 1M plants';

export async function scale(bench: Bench, stores: Stores): Promise<void> {
  const { small, large, smallToken, largeToken, pgSmall, pgLarge } = stores;
  const noCache = { LIST_CACHE_PLANTS: '0' };
  const systems = {
    small: await bench.startServer('plantstore sqlite 10k', `sqlite:${small}.s3`, 's3-small'),
    large: await bench.startServer('plantstore sqlite 1M', `sqlite:${large}`, 's3-large'),
    smallNoCache: await bench.startServer('plantstore sqlite 10k, no cache', `sqlite:${small}.s3-nocache`, 's3-small-nc', noCache),
    largeNoCache: await bench.startServer('plantstore sqlite 1M, no cache', `sqlite:${large}.nocache`, 's3-large-nc', noCache),
    pgSmall: pgSmall && (await bench.startServer('plantstore postgres 10k', pgSmall.url, 's3-pg-small')),
    pgLarge: pgLarge && (await bench.startServer('plantstore postgres 1M', pgLarge.url, 's3-pg-large')),
  };
  const t = {
    small: bench.target(systems.small, 'list', smallToken),
    large: bench.target(systems.large, 'list', largeToken),
    smallNoCache: bench.target(systems.smallNoCache, 'list', smallToken),
    largeNoCache: bench.target(systems.largeNoCache, 'list', largeToken),
    pgSmall: systems.pgSmall && pgSmall ? bench.target(systems.pgSmall, 'list', pgSmall.token) : undefined,
    pgLarge: systems.pgLarge && pgLarge ? bench.target(systems.pgLarge, 'list', pgLarge.token) : undefined,
  };
  await bench.rounds(TITLE, [
    t.small, t.large, t.smallNoCache, t.largeNoCache,
    ...(t.pgSmall && t.pgLarge ? [t.pgSmall, t.pgLarge] : []),
  ]);
  bench.report.rows.push(
    { scenario: TITLE, target: t.small },
    { scenario: '', target: t.large, reference: t.small, referenceName: '10k', goal: 0.8 },
    { scenario: '', target: t.smallNoCache },
    { scenario: '', target: t.largeNoCache, reference: t.smallNoCache, referenceName: '10k', goal: 0.8 },
    ...(t.pgSmall && t.pgLarge
      ? [{ scenario: '', target: t.pgSmall }, { scenario: '', target: t.pgLarge, reference: t.pgSmall, referenceName: '10k' }]
      : []),
  );
  for (const system of Object.values(systems)) await system?.stop(); // less competition for the CPU
}
