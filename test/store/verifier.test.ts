import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import type { Principal } from '../../src/domain/principal.js';
import { bearerAuth, Refusal, requireScope, type Verdict, type Verifier } from '../../src/http/auth/index.js';
import { OpaqueTokenVerifier } from '../../src/http/auth/opaque.js';
import { toApiError } from '../../src/http/error-mapping.js';
import { issueToken } from '../helpers/tokens.js';
import { bearer, errorBody, testStore } from '../helpers/app.js';

/** What a JWT verifier looks like from the outside: chosen by shape, answering asynchronously. */
class ThreePartVerifier implements Verifier {
  accepts(token: string): boolean {
    return token.split('.').length === 3;
  }

  async verify(token: string): Promise<Verdict> {
    await new Promise((resolve) => setImmediate(resolve));
    if (token !== 'head.body.sig') return new Refusal('bad-signature');
    return { tokenId: -1, user: 'federated', scopes: ['plants:read'], admin: false } satisfies Principal;
  }
}

test('a second verifier, chosen by the bearer string\'s shape, decides for its tokens beside opaque tokens', async (t) => {
  const { store } = await testStore(t);
  const app = Fastify();
  t.after(() => app.close());
  app.setErrorHandler((error, _request, reply) => {
    const api = toApiError(error);
    void reply.code(api.row.status).headers(api.headers).send({ error: api.row.code, message: api.message });
  });
  const auth = bearerAuth(app, store, {}, [new ThreePartVerifier(), new OpaqueTokenVerifier(store)]);
  assert.equal(app.hasRequestDecorator('principal'), true, 'request.principal is a declared decoration');
  app.get('/who', { onRequest: [...auth.identify, requireScope('plants:read'), ...auth.throttle] }, async (request) => request.principal.user);
  app.get('/write', { onRequest: [...auth.identify, requireScope('plants:write'), ...auth.throttle] }, async () => 'written');

  const opaque = (await issueToken(store, { user: 'alice' })).secret;
  const who = async (token: string) => app.inject({ url: '/who', headers: bearer(token) });
  assert.equal((await who('head.body.sig')).body, 'federated');
  assert.equal((await who(opaque)).body, 'alice');
  const forged = await who('head.body.forged');
  assert.equal(forged.statusCode, 401);
  assert.equal(errorBody(forged).error, 40101);
  assert.match(String(forged.headers['www-authenticate']), /error="invalid_token"/);
  // The scope step is the route's, whatever verified the token.
  const write = await app.inject({ url: '/write', headers: bearer('head.body.sig') });
  assert.equal(write.statusCode, 403);
  assert.equal(errorBody(write).error, 40300);
  assert.equal((await app.inject({ url: '/write', headers: bearer(opaque) })).body, 'written');
});

test('an opaque token read less than a cache lifetime ago is verified synchronously, with no promise', async (t) => {
  const { store } = await testStore(t);
  const { secret, record } = await issueToken(store, { user: 'alice' });
  const verifier = new OpaqueTokenVerifier(store);
  const first = verifier.verify(secret, Date.now());
  assert.ok(first instanceof Promise, 'the first use reads the store');
  const read = await first;
  const again = verifier.verify(secret, Date.now());
  assert.ok(!(again instanceof Promise), 'a cached token is answered at once');
  assert.ok(!(again instanceof Refusal));
  assert.equal(again.tokenId, record.id);
  assert.equal(verifier.verify(secret, Date.now()), again, 'its principal is built once per read');
  assert.deepEqual(again, read);
});
