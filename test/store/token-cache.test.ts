import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { OpaqueTokenVerifier, TOKEN_CACHE_TTL_MS } from '../../src/http/auth/opaque.js';
import { Refusal } from '../../src/http/auth/verifier.js';
import type { Store } from '../../src/store/store.js';
import { generateToken } from '../../src/domain/token.js';
import { issueToken } from '../helpers/tokens.js';
import { testStore } from '../helpers/app.js';

/** A verifier on a real store, whose token reads are counted (the verifier reads nothing else). */
async function counted(t: TestContext): Promise<{ verifier: OpaqueTokenVerifier; store: Store; reads: () => number }> {
  const { store } = await testStore(t);
  let reads = 0;
  const reading = {
    tokens: {
      findTokenByHash: (hash: string) => {
        reads++;
        return store.tokens.findTokenByHash(hash);
      },
    },
  } as unknown as Store;
  return { verifier: new OpaqueTokenVerifier(reading), store, reads: () => reads };
}

test('a token is read from the store once per TTL; meanwhile it is answered at once, with the same principal', async (t) => {
  const { verifier, store, reads } = await counted(t);
  const { secret } = await issueToken(store, { user: 'alice' });
  const now = Date.now();
  const first = await verifier.verify(secret, now);
  assert.equal(reads(), 1);
  assert.ok(!(first instanceof Refusal));
  assert.equal(first.user, 'alice');
  const cached = verifier.verify(secret, now + 1);
  assert.ok(!(cached instanceof Promise), 'a cached token needs no promise');
  assert.deepEqual(cached, first);
  for (let i = 2; i < 5; i++) assert.equal(verifier.verify(secret, now + i), cached, 'its principal is made once per read');
  assert.equal(reads(), 1);
  await verifier.verify(secret, now + TOKEN_CACHE_TTL_MS);
  assert.equal(reads(), 2, 'read again once its entry is a TTL old');
});

test('a bearer string that is no token is read each time, refused, and never kept; an unknown token is forgotten', async (t) => {
  const { verifier, reads } = await counted(t);
  const now = Date.now();
  for (const bearer of ['pst_short', 'x'.repeat(2000)]) {
    for (let i = 0; i < 2; i++) {
      const verdict = verifier.verify(bearer, now);
      assert.equal(verifier.cachedTokens, 0, 'not held even while its read is in flight');
      assert.ok((await verdict) instanceof Refusal);
    }
  }
  assert.equal(reads(), 4);
  assert.equal(verifier.cachedTokens, 0);
  const unknown = generateToken();
  assert.ok((await verifier.verify(unknown, now)) instanceof Refusal);
  assert.ok((await verifier.verify(unknown, now)) instanceof Refusal);
  assert.equal(reads(), 6, 'an unknown token is read again: a token issued meanwhile works at once');
  assert.equal(verifier.cachedTokens, 0);
});

test('the cache holds no token read a TTL ago once another token is read', async (t) => {
  const { verifier, store } = await counted(t);
  const alice = (await issueToken(store, { user: 'alice' })).secret;
  const bob = (await issueToken(store, { user: 'bob' })).secret;
  const now = Date.now();
  await verifier.verify(alice, now);
  await verifier.verify(bob, now + 1);
  assert.equal(verifier.cachedTokens, 2);
  const carol = (await issueToken(store, { user: 'carol' })).secret;
  await verifier.verify(carol, now + TOKEN_CACHE_TTL_MS);
  assert.equal(verifier.cachedTokens, 2, "alice's token (read a TTL ago) is gone, bob's is not yet");
  await verifier.verify(carol, now + TOKEN_CACHE_TTL_MS + 1);
  await verifier.verify(alice, now + TOKEN_CACHE_TTL_MS + 1);
  assert.equal(verifier.cachedTokens, 2, "bob's token went when alice's was read again");
});
