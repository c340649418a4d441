import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';

test('defaults: port 8080 on 127.0.0.1, info logs, ./data/plantstore.db, rate limit off', () => {
  assert.deepEqual(loadConfig({}, {}), {
    port: 8080,
    host: '127.0.0.1',
    logLevel: 'info',
    database: { kind: 'sqlite', path: resolve('data/plantstore.db') },
    rateLimit: 'off',
  });
});

test('the environment overrides defaults and flags override the environment', () => {
  const env = { PORT: '9000', HOST: '0.0.0.0', LOG_LEVEL: 'warn', DATABASE_URL: 'sqlite:/var/lib/plants.db', RATE_LIMIT: 'off' };
  const fromEnv = loadConfig({}, env);
  assert.equal(fromEnv.port, 9000);
  assert.equal(fromEnv.host, '0.0.0.0');
  assert.equal(fromEnv.logLevel, 'warn');
  assert.deepEqual(fromEnv.database, { kind: 'sqlite', path: '/var/lib/plants.db' });
  const fromFlags = loadConfig({ port: '9001', 'database-url': 'sqlite:rel.db' }, env);
  assert.equal(fromFlags.port, 9001);
  assert.deepEqual(fromFlags.database, { kind: 'sqlite', path: resolve('rel.db') });
});

test('invalid settings are refused with a message naming the variable', () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: '65536' }, /PORT/],
    [{ PORT: '-1' }, /PORT/],
    [{ PORT: '80a' }, /PORT/],
    [{ HOST: '' }, /HOST/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ DATABASE_URL: 'postgres://db/plants' }, /DATABASE_URL/],
    [{ DATABASE_URL: 'sqlite:' }, /DATABASE_URL/],
    [{ DATABASE_URL: 'sqlite::memory:' }, /durable/],
    [{ RATE_LIMIT: '600/minute' }, /RATE_LIMIT/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig({}, env), (e: unknown) => e instanceof ConfigError && message.test(e.message), JSON.stringify(env));
  }
});
