import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { configTableMarkdown } from '../../scripts/docs-tables.js';
import { ConfigError } from '../../src/config/error.js';
import { loadConfig, loadLogConfig } from '../../src/config/load.js';
import { allowedValues, OPTIONS, type OptionInfo } from '../../src/config/options.js';

test('defaults: port 8080 on 127.0.0.1, info logs, ./data/plantstore.db, rate limit off', () => {
  assert.deepEqual(loadConfig({}, {}, process.cwd()), {
    port: 8080,
    host: '127.0.0.1',
    logLevel: 'info',
    logFormat: 'auto',
    database: { kind: 'sqlite', path: resolve('data/plantstore.db') },
    databasePoolSize: 10,
    databaseStartupTimeoutMs: 30_000,
    listCachePlants: 100_000,
    accessLog: false,
    docs: true,
    maxBodySize: 65_536,
    maxHeaderSize: 16_384,
    maxUrlLength: 4096,
    maxJsonDepth: 32,
    maxConnections: 4096,
    maxConnectionsPerAddress: 256,
    requestTimeoutMs: 30_000,
    drainTimeoutMs: 10_000,
    feedRetentionMs: 86_400_000,
    feedHeartbeatMs: 15_000,
    feedMaxStreams: 2048,
    feedMaxStreamsPerToken: 10,
    trustProxy: false,
    corsOrigins: [],
    authFailureLimit: { limit: 60, windowMs: 60_000 },
    rateLimit: null,
    webhookAllowPrivate: false,
    webhookMaxPerUser: 10,
    webhookMaxQueuedPerUser: 10_000,
    webhookTimeoutMs: 10_000,
    webhookRetryScheduleMs: [5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
    webhookRetentionMs: 7 * 86_400_000,
    webhookConcurrency: 64,
    webhookEndpointConcurrency: 32,
    jwtIssuer: null,
    jwtJwksUrl: null,
    jwtAudience: null,
    jwtAlgorithms: ['RS256', 'PS256', 'ES256', 'EdDSA'],
    jwtClockSkewMs: 60_000,
    jwtUserClaim: 'sub',
    jwtDefaultScopes: [],
    metricsPort: null,
    metricsHost: '127.0.0.1',
  });
});

test('postgres:// and postgresql:// select PostgreSQL, with pool size and start-up wait', () => {
  for (const url of ['postgres://app:secret@db.internal:5432/plants', 'postgresql://db/plants?sslmode=require']) {
    assert.deepEqual(loadConfig({}, { DATABASE_URL: url }, process.cwd()).database, { kind: 'postgres', url });
  }
  const config = loadConfig({ 'database-pool-size': '25' }, { DATABASE_URL: 'postgres://db/p', DATABASE_STARTUP_TIMEOUT: '2m' }, process.cwd());
  assert.equal(config.databasePoolSize, 25);
  assert.equal(config.databaseStartupTimeoutMs, 120_000);
});

test('the environment overrides defaults and flags override the environment', () => {
  const env = { PORT: '9000', HOST: '0.0.0.0', LOG_LEVEL: 'warn', DATABASE_URL: 'sqlite:/var/lib/plants.db', RATE_LIMIT: 'off' };
  const fromEnv = loadConfig({}, env, process.cwd());
  assert.equal(fromEnv.port, 9000);
  assert.equal(fromEnv.host, '0.0.0.0');
  assert.equal(fromEnv.logLevel, 'warn');
  assert.deepEqual(fromEnv.database, { kind: 'sqlite', path: '/var/lib/plants.db' });
  const fromFlags = loadConfig({ port: '9001', 'database-url': 'sqlite:rel.db' }, env, process.cwd());
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
    [{ LOG_FORMAT: 'xml' }, /LOG_FORMAT must be one of auto, json, pretty, got "xml"/],
    [{ DATABASE_URL: 'mysql://db/plants' }, /DATABASE_URL/],
    [{ DATABASE_URL: 'postgres:db' }, /DATABASE_URL/],
    [{ DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE/],
    [{ DATABASE_POOL_SIZE: 'ten' }, /DATABASE_POOL_SIZE/],
    [{ DATABASE_STARTUP_TIMEOUT: '30' }, /DATABASE_STARTUP_TIMEOUT/],
    [{ DATABASE_URL: 'sqlite:' }, /DATABASE_URL/],
    [{ DATABASE_URL: 'sqlite::memory:' }, /durable/],
    [{ RATE_LIMIT: '600' }, /RATE_LIMIT/],
    [{ RATE_LIMIT: '0/minute' }, /RATE_LIMIT/],
    [{ AUTH_FAILURE_LIMIT: '60/day' }, /AUTH_FAILURE_LIMIT/],
    [{ MAX_BODY_SIZE: '0' }, /MAX_BODY_SIZE/],
    [{ MAX_HEADER_SIZE: '16k' }, /MAX_HEADER_SIZE/],
    [{ MAX_JSON_DEPTH: '0' }, /MAX_JSON_DEPTH/],
    [{ REQUEST_TIMEOUT: '30' }, /REQUEST_TIMEOUT/],
    [{ DRAIN_TIMEOUT: 'soon' }, /DRAIN_TIMEOUT/],
    [{ TRUST_PROXY: '2' }, /TRUST_PROXY/],
    [{ TRUST_PROXY: 'everyone' }, /TRUST_PROXY/],
    [{ CORS_ORIGINS: '*' }, /CORS_ORIGINS/],
    [{ CORS_ORIGINS: 'https://app.example/path' }, /CORS_ORIGINS/],
    [{ LIST_CACHE_PLANTS: '-1' }, /LIST_CACHE_PLANTS/],
    [{ ACCESS_LOG: 'yes' }, /ACCESS_LOG/],
    [{ DOCS: 'false' }, /DOCS must be on or off/],
  ];
  for (const [env, message] of cases) {
    assert.throws(() => loadConfig({}, env, process.cwd()), (e: unknown) => e instanceof ConfigError && message.test(e.message), JSON.stringify(env));
  }
});

test('a refused DATABASE_URL is not echoed, since it may hold a password', () => {
  assert.throws(
    () => loadConfig({}, { DATABASE_URL: 'mysql://app:hunter2@db/plants' }, process.cwd()),
    (e: unknown) => e instanceof ConfigError && !e.message.includes('hunter2'),
  );
});

test('a postgres DATABASE_URL that node-postgres cannot read is refused as configuration loads, naming the part, never echoing the URL', () => {
  const port = 'DATABASE_URL: the port must be a whole number from 1 to 65535';
  const cases: Array<[string, string | RegExp]> = [
    ['postgres://app:hunter2@db:abc/plants', port],
    ['postgres://app:hunter2@db:0/plants', port],
    ['postgres://app:hunter2@db:65536/plants', port],
    ['postgresql://app:hunter2@[::1]:x/plants', port],
    ['postgres://app:hunter2@db/plants?port=abc', 'DATABASE_URL: port= must be a whole number from 1 to 65535'],
    // An unencoded "/" in the password: the authority ends there, so no parser can read it.
    ['postgres://app:hunt/er2@db/plants', /^DATABASE_URL is not a URL node-postgres can read \(postgres:\/\/user:password@host:port\/database; .*percent-encoded\)$/],
  ];
  for (const [url, message] of cases) {
    assert.throws(
      () => loadConfig({}, { DATABASE_URL: url }, process.cwd()),
      (e: unknown) => e instanceof ConfigError && (typeof message === 'string' ? e.message === message : message.test(e.message)) && !/hunt/.test(e.message),
      url,
    );
  }
  // What node-postgres reads is accepted as it is: spaces, a socket directory with no host, IPv6, query settings.
  for (const url of [
    'postgres://app:p%40ss@[::1]:6543/plants?sslmode=require', 'postgres://app@/plants?host=/var/run/postgresql',
    'postgres://app:pa ss@db/plants', 'postgres://db:65535/plants?port=5433&options=-c%20search_path%3Dplantstore',
  ]) {
    assert.deepEqual(loadConfig({}, { DATABASE_URL: url }, process.cwd()).database, { kind: 'postgres', url }, url);
  }
});

test('a refused setting is named as it was given: --port for the flag the user typed, PORT for the environment', () => {
  assert.throws(() => loadConfig({ port: 'abc' }, {}, process.cwd()), { message: '--port must be a whole number from 0 to 65535, got "abc"' });
  assert.throws(() => loadConfig({}, { PORT: 'abc' }, process.cwd()), { message: 'PORT must be a whole number from 0 to 65535, got "abc"' });
  assert.throws(() => loadConfig({ 'database-url': 'postgres://db:abc/plants' }, {}, process.cwd()), { message: '--database-url: the port must be a whole number from 1 to 65535' });
  // Only the setting given as a flag is renamed (METRICS_PORT is not PORT), and a quoted value stays as given.
  assert.throws(() => loadConfig({ port: '9000' }, { METRICS_PORT: '9000' }, process.cwd()), { message: 'METRICS_PORT must differ from --port (9000): metrics have a listener of their own' });
  assert.throws(() => loadConfig({ 'log-level': 'PORT' }, {}, process.cwd()), { message: '--log-level must be one of fatal, error, warn, info, debug, trace, silent, got "PORT"' });
});

test('limits and security settings parse as documented', () => {
  const config = loadConfig({}, {
    RATE_LIMIT: '600/minute', AUTH_FAILURE_LIMIT: 'off', TRUST_PROXY: '10.0.0.0/8, loopback',
    CORS_ORIGINS: 'https://app.example, http://localhost:3000', REQUEST_TIMEOUT: '2m', MAX_BODY_SIZE: '1024',
  }, process.cwd());
  assert.deepEqual(config.rateLimit, { limit: 600, windowMs: 60_000 });
  assert.equal(config.authFailureLimit, null);
  assert.equal(config.trustProxy, '10.0.0.0/8, loopback');
  assert.deepEqual(config.corsOrigins, ['https://app.example', 'http://localhost:3000']);
  assert.equal(config.requestTimeoutMs, 120_000);
  assert.equal(config.maxBodySize, 1024);
  assert.deepEqual(loadConfig({}, { RATE_LIMIT: '5/second' }, process.cwd()).rateLimit, { limit: 5, windowMs: 1000 });
  assert.deepEqual(loadConfig({}, { RATE_LIMIT: '100/hour' }, process.cwd()).rateLimit, { limit: 100, windowMs: 3_600_000 });
});

test('the range --help and docs/configuration.md show for each number is the range the option accepts', () => {
  const numbers = (OPTIONS as readonly OptionInfo[]).filter((o) => o.values?.kind === 'integer');
  assert.ok(numbers.some((o) => o.env === 'PORT'));
  for (const o of numbers) {
    const [, min, max] = /^range (\d+)–(\d+)$/.exec(allowedValues(o) ?? '') ?? [];
    assert.ok(min !== undefined && max !== undefined, o.env);
    for (const ok of [min, max]) assert.doesNotThrow(() => loadConfig({}, { [o.env]: ok }, process.cwd()), `${o.env}=${ok}`);
    const outside = [String(Number(max) + 1), ...(Number(min) > 0 ? [String(Number(min) - 1)] : [])];
    for (const bad of outside) assert.throws(() => loadConfig({}, { [o.env]: bad }, process.cwd()), ConfigError, `${o.env}=${bad}`);
  }
  assert.match(configTableMarkdown(), /\| `PORT` \| `--port` \| `8080` \| TCP port to listen on \(0 picks a free one\)\. Range 0–65535\. \|/);
  assert.match(configTableMarkdown(), /\| `REQUEST_TIMEOUT` \| .*\. A duration more than 0 \(90s, 15m, 12h, 30d\)\. \|/);
  assert.match(configTableMarkdown(), /\| `DRAIN_TIMEOUT` \| .*\. A duration \(0, 90s, 15m, 12h, 30d\)\. \|/);
});

test('every duration setting reads the one grammar: 0 with any unit or none is zero, refused only where it would turn a limit off', () => {
  const durations = (OPTIONS as readonly OptionInfo[]).filter((o) => o.values?.kind === 'duration');
  assert.ok(durations.some((o) => o.env === 'JWT_CLOCK_SKEW'));
  const keyOf = (env: string) => (OPTIONS as readonly OptionInfo[]).find((o) => o.env === env)?.key as keyof ReturnType<typeof loadConfig>;
  for (const o of durations) {
    const positive = o.values?.kind === 'duration' && o.values.positive;
    assert.equal(allowedValues(o), positive ? 'a duration more than 0 (90s, 15m, 12h, 30d)' : 'a duration (0, 90s, 15m, 12h, 30d)', o.env);
    for (const zero of ['0', '0s', '0m', '0h', '0d']) {
      if (positive) {
        assert.throws(() => loadConfig({}, { [o.env]: zero }, process.cwd()), (e: unknown) => e instanceof ConfigError && e.message === `${o.env} must be more than 0, got "${zero}"`);
      } else {
        assert.equal(loadConfig({}, { [o.env]: zero }, process.cwd())[keyOf(o.env)], 0, `${o.env}=${zero}`);
      }
    }
    for (const bad of ['00', '00s', '05m', '1w', '-1s', '1.5h', '1000000s', ' 5s', '']) {
      assert.throws(() => loadConfig({}, { [o.env]: bad }, process.cwd()), (e: unknown) => e instanceof ConfigError && e.message.startsWith(`${o.env} must look like`), `${o.env}=${bad}`);
    }
    assert.equal(loadConfig({}, { [o.env]: '999999s' }, process.cwd())[keyOf(o.env)], 999_999_000, o.env);
  }
  // The positive ones are those whose zero means something else: Node reads a request timeout of 0 as none.
  assert.deepEqual(durations.filter((o) => o.values?.kind === 'duration' && o.values.positive).map((o) => o.env), ['REQUEST_TIMEOUT', 'FEED_RETENTION', 'FEED_HEARTBEAT', 'WEBHOOK_TIMEOUT']);
  assert.deepEqual(loadConfig({}, { WEBHOOK_RETRY_SCHEDULE: '0s,0,5m' }, process.cwd()).webhookRetryScheduleMs, [0, 0, 300_000]);
  assert.throws(() => loadConfig({}, { WEBHOOK_RETRY_SCHEDULE: '0s,00s' }, process.cwd()), ConfigError);
});

test('numbers are plain decimal digits: no sign, space, exponent or hex, whatever a schema library would coerce', () => {
  for (const value of [' 5', '5 ', '+5', '1e2', '0x10', '5.0', '']) {
    assert.throws(() => loadConfig({}, { PORT: value }, process.cwd()), (e: unknown) => e instanceof ConfigError && /PORT must be a whole number/.test(e.message), JSON.stringify(value));
  }
  assert.equal(loadConfig({}, { PORT: '00080' }, process.cwd()).port, 80);
  // node:net takes an IPv6 zone id; so does the setting.
  assert.equal(loadConfig({}, { TRUST_PROXY: 'fe80::1%eth0' }, process.cwd()).trustProxy, 'fe80::1%eth0');
});

test('LOG_FORMAT takes auto (the default), json or pretty, from the environment or --log-format', () => {
  assert.equal(loadConfig({}, { LOG_FORMAT: 'json' }, process.cwd()).logFormat, 'json');
  assert.equal(loadConfig({ 'log-format': 'pretty' }, { LOG_FORMAT: 'json' }, process.cwd()).logFormat, 'pretty');
  assert.equal(loadConfig({}, { LOG_FORMAT: 'auto' }, process.cwd()).logFormat, 'auto');
});

test('the log settings of a refused configuration: each valid one as given, a refused one at its default', () => {
  assert.deepEqual(loadLogConfig({}, { LOG_FORMAT: 'pretty', LOG_LEVEL: 'warn', PORT: 'http' }, process.cwd()), { logFormat: 'pretty', logLevel: 'warn' });
  assert.deepEqual(loadLogConfig({ 'log-format': 'json' }, { LOG_FORMAT: 'pretty', LOG_LEVEL: 'loud' }, process.cwd()), { logFormat: 'json', logLevel: 'info' });
  assert.deepEqual(loadLogConfig({ 'log-format': 'xml' }, { LOG_LEVEL: 'error' }, process.cwd()), { logFormat: 'auto', logLevel: 'error' });
});
