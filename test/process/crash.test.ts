import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { runCli, startServer } from '../helpers/process.js';

const ROUNDS = 4;
const CLIENTS = 16;

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
  const token = (await runCli(['token', 'create', '--user', 'alice'], { DATABASE_URL: databaseUrl })).stdout.trim();
  const acknowledged: string[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const server = await startServer(t, { DATABASE_URL: databaseUrl });
    let running = true;
    const client = async (c: number) => {
      for (let n = 0; running; n++) {
        const name = `r${round}-c${c}-${n}`;
        const res = await fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ id: round * 1_000_000 + c * 10_000 + n, name }),
        }).catch(() => undefined); // the process is gone: this create was never acknowledged
        if (!res) return;
        if (res.status === 200) acknowledged.push(name);
        else assert.fail(`create ${name} answered ${res.status}`);
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
    await sleep(200 + Math.random() * 1300);
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
  assert.ok(acknowledged.length > 100, 'the rounds did create under load');
  assert.deepEqual(missing, [], 'every acknowledged create survived');
  assert.deepEqual(duplicated, [], 'nothing stored twice');
  assert.equal(await server.stop(), 0);
});
