import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';

const ROUNDS = 4;
const CLIENTS = 16;
/**
 * Each round is killed once a random number of its creates were acknowledged, in this range: a moment
 * counted in creates, not in time, so that a loaded machine still kills each round mid-stream.
 */
const KILL_AFTER = { min: 30, max: 400 } as const;

/** Every plant of the user, following Link rel="next" through all pages. */
async function allNames(base: string, token: string): Promise<string[]> {
  const names: string[] = [];
  let url: string | undefined = `${base}/plants?limit=1000`;
  while (url) {
    const res: Response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    names.push(...((await res.json()) as Array<{ name: string }>).map((p) => p.name));
    const next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
    url = next ? `${base}${next}` : undefined;
  }
  return names;
}

test('kill -9 at a random moment under concurrent creates loses no acknowledged create, and duplicates none', async (t) => {
  const { url: databaseUrl } = await testDatabase(t);
  const token = (await cli(['token', 'create', '--user', 'alice'], { env: { DATABASE_URL: databaseUrl } })).stdout.trim();
  const acknowledged: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const server = await startServer(t, { DATABASE_URL: databaseUrl });
    let running = true;
    const killAfter = KILL_AFTER.min + Math.floor(Math.random() * (KILL_AFTER.max - KILL_AFTER.min));
    let acknowledgedHere = 0;
    let reached!: () => void;
    const killMoment = new Promise<void>((resolve) => (reached = resolve));
    const client = async (c: number) => {
      for (let n = 0; running; n++) {
        const name = `r${round}-c${c}-${n}`;
        const res = await fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ id: round * 1_000_000 + c * 10_000 + n, name }),
        }).catch(() => undefined); // the process is gone: this create was never acknowledged
        if (!res) return;
        if (res.status !== 200) assert.fail(`create ${name} answered ${res.status}`);
        acknowledged.push(name);
        if (++acknowledgedHere === killAfter) reached();
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
    // The other clients' creates are in flight at that moment, so the kill finds some half done. A
    // client that fails ends the wait too, and its failure is the test's.
    await Promise.race([killMoment, Promise.all(clients)]);
    server.child.kill('SIGKILL');
    running = false;
    await Promise.all(clients);
    assert.equal(await server.exited, null, 'killed, not exited');
  }

  const server = await startServer(t, { DATABASE_URL: databaseUrl });
  const stored = await allNames(server.url, token);
  const counts = new Map<string, number>();
  for (const name of stored) counts.set(name, (counts.get(name) ?? 0) + 1);
  const missing = acknowledged.filter((name) => !counts.has(name));
  const duplicated = [...counts].filter(([, n]) => n > 1);
  t.diagnostic(`${ROUNDS} crashes: ${acknowledged.length} creates acknowledged, ${stored.length} stored`);
  assert.ok(acknowledged.length >= ROUNDS * KILL_AFTER.min, 'each round created until its kill');
  assert.deepEqual(missing, [], 'every acknowledged create survived');
  assert.deepEqual(duplicated, [], 'nothing stored twice');
  assert.equal(await server.stop(), 0);
});
