import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { Agent, request } from 'undici';
import { testDatabase } from '../helpers/app.js';
import { startServer } from '../helpers/process.js';

/**
 * A busy client from one address, as service clients are: undici's default pool (no bound on its
 * connections per origin, keep-alive) firing `count` requests at once. Resolves with each request's
 * status, or its error code when it got no answer.
 */
async function burst(agent: Agent, url: string, count: number): Promise<Array<number | string>> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      try {
        const res = await request(`${url}/healthz`, { dispatcher: agent });
        await res.body.dump();
        return res.statusCode;
      } catch (error) {
        return String((error as { code?: string }).code ?? error);
      }
    }),
  );
}

/** How many of each outcome: `{ 200: 300 }` when all were answered 200. */
const tally = (outcomes: Array<number | string>) =>
  outcomes.reduce<Record<string, number>>((all, o) => ({ ...all, [o]: (all[o] ?? 0) + 1 }), {});

/** A server with the default limits (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS), and a client pool of its own. */
async function defaults(t: TestContext): Promise<{ url: string; agent: Agent }> {
  const server = await startServer(t, { DATABASE_URL: (await testDatabase(t)).url, LOG_FORMAT: 'json' });
  const agent = new Agent();
  t.after(() => agent.destroy());
  return { url: server.url, agent };
}

test('a burst of 300 requests at once from one address, more connections than MAX_CONNECTIONS_PER_ADDRESS, is all answered 200', async (t) => {
  const { url, agent } = await defaults(t);
  assert.deepEqual(tally(await burst(agent, url, 300)), { 200: 300 });
});

test('ten bursts of 200 from one address on a keep-alive pool are all answered 200, pooled connections included', async (t) => {
  const { url, agent } = await defaults(t);
  const outcomes: Array<number | string> = [];
  for (let i = 0; i < 10; i++) outcomes.push(...(await burst(agent, url, 200)));
  assert.deepEqual(tally(outcomes), { 200: 2000 });
});
