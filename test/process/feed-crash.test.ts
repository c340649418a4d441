import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareFeed, parseFeedId } from '../../src/domain/feed.js';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';
import { subscribe, type ServerSentEvent } from '../helpers/sse.js';

const WRITERS = 3;

const nameOf = (e: ServerSentEvent) => (JSON.parse(e.data) as { name: string }).name;

test('kill -9 under creates, then a restart: a client resumes from its last id and has every acknowledged create once, in order', async (t) => {
  const { url: databaseUrl } = await testDatabase(t);
  const created = await cli(['token', 'create', '--user', 'alice'], { env: { DATABASE_URL: databaseUrl } });
  assert.equal(created.code, 0, created.stderr);
  const token = created.stdout.trim();
  const first = await startServer(t, { DATABASE_URL: databaseUrl });
  const { feed: before } = await subscribe(t, first.url, { token });

  /** Per writer: the creates answered 200, in order, and the one in flight when the process went, if any. */
  const writers = Array.from({ length: WRITERS }, async (_, w) => {
    const acknowledged: string[] = [];
    for (let n = 0; ; n++) {
      const name = `w${w}-${n}`;
      const res = await fetch(`${first.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id: w * 1_000_000 + n + 1, name }),
      }).catch(() => undefined);
      // The process is gone: this create may or may not have committed, and was never acknowledged.
      if (res === undefined) return { acknowledged, unsure: name };
      assert.equal(res.status, 200, `create ${name}`);
      acknowledged.push(name);
    }
  });
  // Killed once the stream has carried some creates, the writers still going: some creates are half done.
  await Promise.race([Promise.all(writers), before.takeUntil(() => before.events.length > 10)]);
  first.child.kill('SIGKILL');
  const written = await Promise.all(writers);
  assert.equal(await before.finished, 'cut', 'the stream was cut');

  const second = await startServer(t, { DATABASE_URL: databaseUrl });
  const last = before.lastEventId;
  // Every id the first process sent is still the log's: the restarted one continues after it (not 410).
  const { feed: after, ready } = await subscribe(t, second.url, { token, lastEventId: last });
  assert.equal(ready, last);
  const res = await fetch(`${second.url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 0, name: 'sentinel' }),
  });
  assert.equal(res.status, 200);
  await after.takeUntil((e) => e.type === 'plant.created' && nameOf(e) === 'sentinel');

  const events = [...before.events.slice(1), ...after.events.slice(1, -1)];
  assert.ok(events.every((e) => e.type === 'plant.created'), JSON.stringify(events));
  const names = events.map(nameOf);
  assert.equal(new Set(names).size, names.length, 'no create twice');
  for (const [w, { acknowledged, unsure }] of written.entries()) {
    // A writer's creates are each sent after the one before was answered: the log has them in that order,
    // then perhaps the one the kill left unanswered.
    const mine = names.filter((n) => n.startsWith(`w${w}-`));
    assert.deepEqual(mine.slice(0, acknowledged.length), acknowledged, `writer ${w}: every acknowledged create, in order`);
    assert.deepEqual(mine.slice(acknowledged.length), mine.length > acknowledged.length ? [unsure] : [], `writer ${w}: nothing else`);
  }
  for (let i = 1; i < events.length; i++) {
    assert.ok(compareFeed(parseFeedId(events[i - 1]!.lastEventId)!, parseFeedId(events[i]!.lastEventId)!) < 0, 'ids in the log\'s order');
  }
  assert.ok(names.length >= 10);
});
