import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { errorBody, list, testApp, type TestAppOptions } from '../helpers/app.js';
import { AUDIENCE, badEcKey, sign, signingKey, signWithWeakKey, TestProvider, weakRsaKey } from '../helpers/jwt-provider.js';

const hour = (limit: number) => ({ limit, windowMs: 3_600_000 });

interface LogLine {
  level: number;
  msg: string;
  kid?: unknown;
  jwks?: unknown;
  err?: unknown;
}

/** An app on the provider's key set, its log lines collected; `logged(pattern)` waits for a line. */
async function loggedApp(t: TestContext, provider: TestProvider, options: TestAppOptions = {}) {
  const stream = new PassThrough();
  const lines: LogLine[] = [];
  const waiters: Array<{ test: (l: LogLine) => boolean; resolve: (l: LogLine) => void }> = [];
  let rest = '';
  stream.on('data', (chunk: Buffer) => {
    rest += chunk.toString();
    const parts = rest.split('\n');
    rest = parts.pop() ?? '';
    for (const part of parts.filter(Boolean)) {
      const line = JSON.parse(part) as LogLine;
      lines.push(line);
      for (const w of waiters.splice(0)) (w.test(line) ? w.resolve(line) : waiters.push(w));
    }
  });
  const { app } = await testApp(t, { jwtJwksUrl: provider.jwksUrl, jwtAudience: AUDIENCE, logStream: stream, ...options });
  const logged = (match: (l: LogLine) => boolean): Promise<LogLine> =>
    new Promise((resolve) => {
      const found = lines.find(match);
      if (found) resolve(found);
      else waiters.push({ test: match, resolve });
    });
  return { app, lines, logged };
}

test('a published key that cannot be imported (an EC point off its curve, a 1024-bit RSA key) is skipped: its JWTs are 401 invalid_token, warned once by kid, never an error, and count toward AUTH_FAILURE_LIMIT', async (t) => {
  const good = await signingKey('RS256', 'good');
  const badEc = await badEcKey('bad-ec');
  const weak = weakRsaKey('weak-rsa');
  const provider = await TestProvider.start(t, [good, badEc, weak]);
  const { app, lines, logged } = await loggedApp(t, provider, { authFailureLimit: hour(6) });
  const claims = { sub: 'alice', scope: 'plants:read' };
  assert.equal((await list(app, await sign(provider, claims, { key: good }))).statusCode, 200, 'the usable key keeps working');

  const tokens = [
    ['bad-ec', await sign(provider, claims, { key: badEc.signer })],
    ['weak-rsa', signWithWeakKey(provider, claims, weak)],
  ] as const;
  for (let round = 0; round < 3; round++) {
    for (const [kid, jwt] of tokens) {
      const res = await list(app, jwt);
      assert.equal(res.statusCode, 401, `${kid}: ${res.body}`);
      assert.equal(errorBody(res).error, 40101, kid);
      assert.equal(errorBody(res).message, 'The bearer token is invalid: the identity provider\'s key for this JWT (kid) cannot be used', kid);
      assert.equal(
        res.headers['www-authenticate'],
        'Bearer realm="plantstore", error="invalid_token", error_description="the identity provider\'s key for this JWT (kid) cannot be used"',
      );
    }
  }
  // Six failures from this address: the seventh request is over AUTH_FAILURE_LIMIT.
  const limited = await list(app, tokens[0][1]);
  assert.equal(limited.statusCode, 429, limited.body);
  assert.equal(errorBody(limited).error, 42901);

  for (const [kid] of tokens) {
    await logged((l) => l.kid === kid);
    const warnings = lines.filter((l) => l.kid === kid);
    assert.equal(warnings.length, 1, `one warning for ${kid} across several requests: ${JSON.stringify(warnings)}`);
    assert.equal(warnings[0]?.level, 40, kid);
    assert.equal(warnings[0]?.jwks, provider.jwksUrl, 'the warning names the key set');
  }
  assert.deepEqual(lines.filter((l) => l.level >= 50), [], 'no error-level line');
  assert.equal(lines.filter((l) => l.msg === 'request failed').length, 0);
});

test('a key set with no key this server can use: a JWT is 503 50302 with Retry-After, not counted as a failed authentication; one warning however often the set is fetched, one line when a usable key appears', async (t) => {
  const badEc = await badEcKey('bad-ec');
  const weak = weakRsaKey('weak-rsa');
  const provider = await TestProvider.start(t, [badEc, weak]);
  const { app, lines, logged } = await loggedApp(t, provider, { authFailureLimit: hour(1), jwtCooldownMs: 100 });
  const claims = { sub: 'alice', scope: 'plants:read' };
  const stranger = await signingKey('ES256', 'stranger');
  for (const jwt of [
    await sign(provider, claims, { key: badEc.signer }),
    signWithWeakKey(provider, claims, weak),
    await sign(provider, claims, { key: stranger }),
    await sign(provider, claims, { key: stranger }),
  ]) {
    const res = await list(app, jwt);
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(errorBody(res).error, 50302);
    assert.match(errorBody(res).message, /^The identity provider publishes no key this server can use .*\(request id [^)]+\)$/);
    assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
    assert.equal(res.headers['www-authenticate'], undefined, 'not an authentication failure');
  }
  // While no key is usable, JWTs make the set be fetched again (once per cooldown): the same set brings
  // no new warning.
  const jwt = await sign(provider, claims, { key: stranger });
  while (provider.jwksRequests < 3) assert.equal((await list(app, jwt)).statusCode, 503);
  await logged((l) => l.msg.startsWith('identity provider publishes no key this server can use'));
  assert.equal(lines.filter((l) => l.msg.startsWith('identity provider publishes no key')).length, 1);
  for (const kid of ['bad-ec', 'weak-rsa']) assert.equal(lines.filter((l) => l.kid === kid).length, 1, kid);
  assert.deepEqual(lines.filter((l) => l.level >= 50), []);

  // The provider publishes a usable key: the next fetch finds it, and says so once.
  const good = await signingKey('ES256', 'good');
  provider.published = [badEc, weak, good];
  const valid = await sign(provider, claims, { key: good });
  let res = await list(app, valid);
  while (res.statusCode === 503) res = await list(app, valid);
  assert.equal(res.statusCode, 200, res.body);
  await logged((l) => l.msg === 'identity provider publishes a usable key again');
});

test('a key set whose body stops arriving is reported with its URL', async (t) => {
  // A key set that sends its headers and then nothing more, until the fetch gives up (its time bound,
  // shortened here: the test is about the message, not the bound's length).
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.write('{"keys": [');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  const provider = { jwksUrl: url } as TestProvider;
  const { logged } = await loggedApp(t, provider, { jwtFetchTimeoutMs: 200 });
  const warning = await logged((l) => l.msg.startsWith('identity provider cannot be reached'));
  assert.equal(warning.level, 40);
  assert.match(String(warning.err), new RegExp(`^${url.replace(/[.?]/g, '\\$&')}: `), String(warning.err));
});
