// The JWT scenario: scenario 1's opaque-token and JWT rows alone, on the same store, for a change to
// authentication that does not need the whole list scenario. The list scenario has these rows too.
import type { Bench } from '../lib/bench.js';
import { LIST_TITLE, startJwtTwin, type Fleet } from '../lib/fleet.js';
import type { Stores } from '../lib/stores.js';

export async function jwt(bench: Bench, stores: Stores, fleet: Fleet): Promise<void> {
  const twin = await startJwtTwin(bench, stores, fleet);
  const opaque = bench.target(fleet.sqlite, 'list', stores.smallToken);
  const withJwt = bench.target(twin.server, 'list', twin.token);
  await bench.rounds(LIST_TITLE, [opaque, withJwt]);
  bench.report.rows.push(
    { scenario: LIST_TITLE, target: opaque },
    { scenario: '', target: withJwt, reference: opaque, referenceName: 'opaque', goal: 0.95 },
  );
  await twin.stop();
}
