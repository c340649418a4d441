import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { hashToken } from '../../src/domain/token.js';
import { issueToken } from '../helpers/tokens.js';
import { bearer, create, errorBody, list, testStore } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** An app on a fresh store whose log, at `level`, the test reads. */
async function loggedApp(t: TestContext, level: string, timing: { queryTimeoutMs?: number; outageProbeMs?: number; outageQuietMs?: number } = {}) {
  const { queryTimeoutMs, ...outage } = timing;
  const ts = await testStore(t, { queryTimeoutMs });
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (d) => (text += d));
  const app = await buildApp({ store: ts.store, logger: createLogger(level, stream), ...outage });
  t.after(() => app.close());
  const lines = (): LogLine[] => text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as LogLine);
  return { ...ts, app, text: () => text, lines };
}

test('a store outage is logged once at warn, without a stack, and its end once at info; not once per request', async (t) => {
  // Each failed create waits out the store's lock timeout, and on SQLite they wait one after another: a
  // short timeout keeps the outage's many requests from adding up to a long wait. The outage's quiet
  // period, shortened too so that its end is seen soon, stays several times the gap between two failures:
  // a quiet period shorter than that gap would end the outage between them.
  const { app, store, lines, text, holdWriteLock } = await loggedApp(t, 'info', { queryTimeoutMs: 200, outageProbeMs: 100, outageQuietMs: 1000 });
  const alice = (await issueToken(store, { user: 'alice' })).secret;
  const release = await holdWriteLock();
  let released = false;
  t.after(() => (released ? undefined : release()));
  const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => create(app, alice, { id: i + 1, name: `p${i}` })));
  for (const res of answers) assert.equal(errorBody(res).error, 50300);

  const warnings = lines().filter((l) => l.level === 40);
  assert.equal(warnings.length, 1, `one warning for 10 failed requests: ${text()}`);
  assert.match(warnings[0]?.msg ?? '', /^store unavailable: /);
  assert.deepEqual(lines().filter((l) => l.level >= 50), [], 'nothing at error level');
  assert.doesNotMatch(text(), /stack/, 'no stack trace');

  await release();
  released = true;
  const back = await eventually(() => lines().find((l) => l.msg === 'store available again'), () => `the end of the outage was never logged: ${text()}`);
  assert.equal(back?.level, 30);
  assert.equal(back?.failedRequests, 10);
  assert.equal((await create(app, alice, { id: 11, name: 'after' })).statusCode, 200);
  assert.equal(lines().filter((l) => l.level === 40).length, 1, 'still the one warning');
});

test('at debug level, a refused bearer token logs why (malformed, unknown, expired, revoked), never the token', async (t) => {
  const { app, store, lines, text } = await loggedApp(t, 'debug');
  const revoked = await issueToken(store, { user: 'alice' });
  await store.tokens.revokeToken(revoked.record.id);
  const expired = await issueToken(store, { user: 'alice', expiresInMs: 1 });
  await eventually(() => (Date.now() > expired.record.expiresAt!.getTime() ? true : undefined), 'the token to expire');
  const unknown = 'pst_thisTokenWasNeverIssued0123456789abcdef';
  const malformed = 'not,a;token';
  const cases = [
    ['malformed', malformed],
    ['unknown', unknown],
    ['expired', expired.secret],
    ['revoked', revoked.secret],
  ] as const;
  for (const [reason, token] of cases) {
    const res = await list(app, token);
    assert.equal(errorBody(res).error, 40101, reason);
  }
  const refusals = lines().filter((l) => l.msg === 'bearer token refused');
  assert.deepEqual(refusals.map((l) => [l.level, l.reason]), cases.map(([reason]) => [20, reason]));
  assert.equal(refusals.find((l) => l.reason === 'revoked')?.tokenId, revoked.record.id);
  for (const [, token] of cases) {
    assert.ok(!text().includes(token), `the token "${token.slice(0, 8)}…" is not logged`);
    assert.ok(!text().includes(hashToken(token)), 'nor its hash');
  }
  // A valid token logs no refusal.
  const valid = (await issueToken(store, { user: 'bob' })).secret;
  assert.equal((await app.inject({ method: 'GET', url: '/plants', headers: bearer(valid) })).statusCode, 200);
  assert.equal(lines().filter((l) => l.msg === 'bearer token refused').length, 4);
});
