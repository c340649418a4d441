import { isIP } from 'node:net';
import envSchema from 'env-schema';
import { Type, type TSchema } from 'typebox';
import { asTyped, ConfigError } from './error.js';
import { DATABASE_URL_REFUSAL, parseDatabaseUrl } from './database.js';
import { DURATION, parseDuration } from '../domain/duration.js';
import { isScope, type Scope } from '../domain/principal.js';

export { ConfigError } from './error.js';
export { parseDatabaseUrl, type DatabaseConfig } from './database.js';

/** At most `limit` events per `windowMs`, counted in fixed windows. */
export interface Rate {
  readonly limit: number;
  readonly windowMs: number;
}

/** Fastify's trustProxy: false, or the proxies' addresses/CIDRs (and proxy-addr's named ranges). */
export type TrustProxy = false | string;

/** What a number or duration option accepts, for `serve --help` and the README (others say so in their help). */
export type OptionValues = { readonly kind: 'integer'; readonly min: number; readonly max: number } | { readonly kind: 'duration' };

/**
 * One setting. Its value is read in two steps: `schema` (TypeBox) states the shape of the raw text, which
 * env-schema checks for every setting at once, filling in `default`; `parse` then turns the text into
 * its typed value, with the checks a schema cannot state (a range beyond a pattern, an IP address, a
 * duration's units). The type of Config follows from the parse functions of the table.
 */
interface Option<K extends string, T> {
  readonly key: K;
  readonly env: string;
  readonly flag: string;
  readonly default: string;
  readonly help: string;
  readonly values?: OptionValues;
  readonly schema: TSchema;
  /** The message when the text does not have the schema's shape; it names the variable. */
  refusal(value: string): string;
  parse(value: string): T;
}

const RATE = /^([1-9]\d{0,8})\/(second|minute|hour)$/;
const WINDOW_MS = { second: 1000, minute: 60_000, hour: 3_600_000 } as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** LOG_FORMAT: auto is pretty on a terminal, JSON otherwise (src/logger.ts decides). */
export type LogFormatSetting = 'auto' | 'json' | 'pretty';
const LOG_FORMATS: readonly LogFormatSetting[] = ['auto', 'json', 'pretty'];

/**
 * The asymmetric signature algorithms a key set can verify. `none` and HMAC (HS256, HS384, HS512) are not
 * among them: an HMAC key is a shared secret, and a public key set must never be used as one (the
 * classic "alg confusion" attack).
 */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

function parseJwtAlgorithms(value: string): readonly JwtAlgorithm[] {
  const names = value.split(',').map((a) => a.trim()).filter(Boolean);
  if (names.length === 0) throw new ConfigError('JWT_ALGORITHMS must name at least one algorithm');
  for (const name of names) {
    if (name.toLowerCase() === 'none' || /^HS\d+$/i.test(name)) {
      throw new ConfigError(`JWT_ALGORITHMS: ${name} is never accepted (unsigned, or an HMAC shared secret rather than a key set's public key)`);
    }
    if (!(JWT_ALGORITHMS as readonly string[]).includes(name)) {
      throw new ConfigError(`JWT_ALGORITHMS: unknown algorithm "${name}"; algorithms are ${JWT_ALGORITHMS.join(', ')}`);
    }
  }
  return [...new Set(names)] as JwtAlgorithm[];
}

function parseJwtDefaultScopes(value: string): readonly Scope[] {
  const names = value.split(/[\s,]+/).filter(Boolean);
  for (const name of names) {
    if (name === 'plants:admin') throw new ConfigError('JWT_DEFAULT_SCOPES must not grant plants:admin (it would make every user of the provider an admin)');
    if (!isScope(name)) throw new ConfigError(`JWT_DEFAULT_SCOPES: unknown scope "${name}"`);
  }
  return [...new Set(names)] as Scope[];
}

const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/**
 * A provider URL: https, or http on a loopback address only (a test stand-in, a local provider): keys
 * fetched over plain HTTP from elsewhere could be replaced by anyone on the path.
 */
export function providerUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.test(url.hostname)) return null;
  return 'must be an https:// URL (http:// only on a loopback address)';
}

function providerUrlOption<K extends string>(key: K, env: string, help: string): Option<K, string | null> {
  return option(key, env, '', help, {
    schema: Type.String(),
    refusal: (value) => `${env} must be an https:// URL, got "${value}"`,
    parse(value) {
      if (value === '') return null;
      const problem = providerUrlProblem(value);
      if (problem) throw new ConfigError(`${env} ${problem}, got "${value}"`);
      return value;
    },
  });
}

/**
 * Every setting, once: the environment variable, the `serve` flag, the default, the help text and the
 * schema of its raw text all come from this table, and so do the README's configuration table and the
 * type Config.
 */
export const OPTIONS = [
  integerOption('port', 'PORT', '8080', 'TCP port to listen on (0 picks a free one)', 0, 65535),
  option('host', 'HOST', '127.0.0.1', 'Address to listen on; 0.0.0.0 or :: to accept connections from other machines', {
    schema: Type.String({ minLength: 1 }),
    refusal: () => 'HOST must not be empty',
    parse: (value) => value,
  }),
  option('logLevel', 'LOG_LEVEL', 'info', `Log level: ${LOG_LEVELS.join(', ')}`, {
    schema: Type.String({ enum: [...LOG_LEVELS] }),
    refusal: (value) => `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${value}"`,
    parse: (value) => value,
  }),
  option(
    'logFormat', 'LOG_FORMAT', 'auto',
    'Log lines as json (one JSON object a line: numeric level, ISO time) or pretty (readable: time, level name, message); auto: pretty when stdout is a terminal, else JSON',
    {
      schema: Type.String({ enum: [...LOG_FORMATS] }),
      refusal: (value) => `LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got "${value}"`,
      parse: (value) => value as LogFormatSetting,
    },
  ),
  option(
    'database', 'DATABASE_URL', 'sqlite:./data/plantstore.db',
    'sqlite:PATH (relative to the working directory, or absolute) for the embedded store; postgres://… (or postgresql://…) for PostgreSQL',
    {
      schema: Type.String({ pattern: '^(sqlite:|postgres(ql)?://)' }),
      refusal: () => DATABASE_URL_REFUSAL,
      parse: parseDatabaseUrl,
    },
  ),
  integerOption(
    'databasePoolSize', 'DATABASE_POOL_SIZE', '10',
    'PostgreSQL: connections per instance, opened as needed and kept (instances × this must stay below the server\'s max_connections)', 1, 1000,
  ),
  durationOption(
    'databaseStartupTimeoutMs', 'DATABASE_STARTUP_TIMEOUT', '30s',
    'PostgreSQL: how long start-up waits for the database to accept connections',
  ),
  integerOption(
    'listCachePlants', 'LIST_CACHE_PLANTS', '100000',
    'SQLite: plants kept in memory in recently listed pages, never stale; the cache also stays under 256 bytes × this, empty pages included (0 turns it off)', 0, 1_000_000_000,
  ),
  option(
    'accessLog', 'ACCESS_LOG', 'off',
    'on: log one line per request (method, URL, status, duration); off leaves that to the load balancer',
    {
      schema: Type.String({ enum: ['on', 'off'] }),
      refusal: (value) => `ACCESS_LOG must be on or off, got "${value}"`,
      parse: (value) => value === 'on',
    },
  ),
  option(
    'docs', 'DOCS', 'on',
    'on: serve the interactive API reference (Swagger UI, every file from this server) at /docs; off: /docs is 404',
    {
      schema: Type.String({ enum: ['on', 'off'] }),
      refusal: (value) => `DOCS must be on or off, got "${value}"`,
      parse: (value) => value === 'on',
    },
  ),
  integerOption('maxBodySize', 'MAX_BODY_SIZE', '65536', 'Largest request body in bytes (larger: 413)', 1, 10 * 1024 * 1024),
  integerOption('maxHeaderSize', 'MAX_HEADER_SIZE', '16384', 'Largest request line plus headers in bytes (larger: 431)', 1024, 1024 * 1024),
  integerOption('maxUrlLength', 'MAX_URL_LENGTH', '4096', 'Longest request URL in characters (longer: 414)', 64, 1024 * 1024),
  integerOption('maxJsonDepth', 'MAX_JSON_DEPTH', '32', 'Deepest nesting of arrays and objects in a JSON body (deeper: 400)', 1, 1000),
  integerOption('maxConnections', 'MAX_CONNECTIONS', '4096', 'Open connections at most; further ones are closed at once. From 7/8 of it on, a connection with no request in progress is closed after 1 s of silence (else at the keep-alive timeout, 72 s)', 1, 1_000_000),
  integerOption('maxConnectionsPerAddress', 'MAX_CONNECTIONS_PER_ADDRESS', '256', 'Open connections from one client address (an IPv6 client: its /64) at most; further ones are closed at once. TRUST_PROXY\'s proxies are not limited (0 turns the limit off)', 0, 1_000_000),
  durationOption('requestTimeoutMs', 'REQUEST_TIMEOUT', '30s', 'A request (headers and body) must arrive within this time (else 408, connection closed)'),
  durationOption('drainTimeoutMs', 'DRAIN_TIMEOUT', '10s', 'On SIGTERM/SIGINT, how long in-flight requests may finish before their connections are closed'),
  option(
    'trustProxy', 'TRUST_PROXY', 'off',
    'Proxies whose X-Forwarded-For names the client: off, or comma-separated addresses/CIDRs (loopback, uniquelocal also)',
    {
      // Not empty; each entry is an IP address (node:net's isIP, which takes IPv6 zone ids such as
      // %eth0, so no pattern can say it) or a named range, checked in parse.
      schema: Type.String({ minLength: 1 }),
      refusal: trustProxyRefusal,
      parse(value): TrustProxy {
        if (value === 'off') return false;
        const valid = (entry: string) => {
          if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
          const [address = '', prefix] = entry.split('/');
          return isIP(address) !== 0 && (prefix === undefined || /^\d{1,3}$/.test(prefix));
        };
        if (value.split(',').every((e) => valid(e.trim()))) return value;
        throw new ConfigError(trustProxyRefusal(value));
      },
    },
  ),
  option(
    'corsOrigins', 'CORS_ORIGINS', '',
    'Comma-separated origins (https://app.example) allowed to call from browsers; empty: CORS off',
    {
      // Any text; each origin is checked in parse, so that the message can name the one refused.
      schema: Type.String(),
      refusal: (value) => `CORS_ORIGINS must be comma-separated origins, got "${value}"`,
      parse(value): readonly string[] {
        const origins = value.split(',').map((o) => o.trim()).filter(Boolean);
        for (const o of origins) {
          if (!/^https?:\/\/[^/\s]+$/.test(o)) throw new ConfigError(`CORS_ORIGINS: "${o}" is not an origin like https://app.example`);
        }
        return origins;
      },
    },
  ),
  rateOption('authFailureLimit', 'AUTH_FAILURE_LIMIT', '60/minute', 'Failed authentications per client address (an IPv6 client: its /64) before 429 (N/second, N/minute, N/hour, or off)'),
  rateOption('rateLimit', 'RATE_LIMIT', 'off', 'Requests per token before 429 (N/second, N/minute, N/hour, or off); shared by all instances'),
  option(
    'webhookAllowPrivate', 'WEBHOOK_ALLOW_PRIVATE', 'off',
    'on: webhooks may call loopback, private, link-local and other internal addresses (local development and tests only); off refuses them at registration and at every delivery',
    {
      schema: Type.String({ enum: ['on', 'off'] }),
      refusal: (value) => `WEBHOOK_ALLOW_PRIVATE must be on or off, got "${value}"`,
      parse: (value) => value === 'on',
    },
  ),
  integerOption('webhookMaxPerUser', 'WEBHOOK_MAX_PER_USER', '10', 'Webhook endpoints one user may register', 1, 10_000),
  durationOption('webhookTimeoutMs', 'WEBHOOK_TIMEOUT', '10s', 'A webhook receiver must answer 2xx within this time, else the attempt failed'),
  option(
    'webhookRetryScheduleMs', 'WEBHOOK_RETRY_SCHEDULE', '5s,5m,30m,2h,5h,10h,10h',
    'Delays before each retry of a failed webhook delivery, comma-separated (each with up to 10% jitter); after the last, the event is failed',
    {
      schema: Type.String({ pattern: `^${DURATION.source.slice(1, -1)}(,${DURATION.source.slice(1, -1)}){0,19}$` }),
      refusal: (value) => `WEBHOOK_RETRY_SCHEDULE must be up to 20 comma-separated durations like 5s,5m,2h, got "${value}"`,
      parse: (value): readonly number[] => value.split(',').map((d) => parseDuration(d) as number),
    },
  ),
  durationOption('webhookRetentionMs', 'WEBHOOK_RETENTION', '7d', 'Delivered and failed webhook events, and their attempts, are kept this long'),
  integerOption('webhookConcurrency', 'WEBHOOK_CONCURRENCY', '64', 'Webhook requests in flight at once, per instance', 1, 10_000),
  integerOption('webhookEndpointConcurrency', 'WEBHOOK_ENDPOINT_CONCURRENCY', '32', 'Webhook requests in flight to one endpoint at once, per instance', 1, 1000),
  providerUrlOption(
    'jwtIssuer', 'JWT_ISSUER',
    'Identity provider (OpenID Connect issuer) whose JWT access tokens are accepted: its keys are found by discovery, and `iss` must equal it; empty: JWTs off',
  ),
  providerUrlOption(
    'jwtJwksUrl', 'JWT_JWKS_URL',
    'The JWT key set (JWKS) URL, instead of discovery from JWT_ISSUER (`iss` is then checked only when JWT_ISSUER is set too)',
  ),
  option('jwtAudience', 'JWT_AUDIENCE', '', 'What a JWT\'s `aud` must contain (required when JWT_ISSUER or JWT_JWKS_URL is set)', {
    schema: Type.String(),
    refusal: () => 'JWT_AUDIENCE must be text',
    parse: (value): string | null => (value.trim() === '' ? null : value.trim()),
  }),
  option(
    'jwtAlgorithms', 'JWT_ALGORITHMS', 'RS256,PS256,ES256,EdDSA',
    `Comma-separated JWT signature algorithms accepted (of ${JWT_ALGORITHMS.join(', ')}); none and HMAC (HS256…) are never accepted`,
    {
      schema: Type.String(),
      refusal: (value) => `JWT_ALGORITHMS must be comma-separated algorithms, got "${value}"`,
      parse: parseJwtAlgorithms,
    },
  ),
  durationOption('jwtClockSkewMs', 'JWT_CLOCK_SKEW', '60s', 'Clock difference tolerated with the identity provider when checking a JWT\'s exp and nbf'),
  option('jwtUserClaim', 'JWT_USER_CLAIM', 'sub', 'The JWT claim that names the user (the same users as `token create --user`)', {
    schema: Type.String({ pattern: '^[\\x21-\\x7e]{1,100}$' }),
    refusal: (value) => `JWT_USER_CLAIM must be a claim name, got "${value}"`,
    parse: (value) => value,
  }),
  option(
    'jwtDefaultScopes', 'JWT_DEFAULT_SCOPES', '',
    'Comma-separated scopes a JWT gets when it carries none of plantstore\'s (for providers that cannot issue custom scopes); never plants:admin',
    {
      schema: Type.String(),
      refusal: (value) => `JWT_DEFAULT_SCOPES must be comma-separated scopes, got "${value}"`,
      parse: parseJwtDefaultScopes,
    },
  ),
  option(
    'metricsPort', 'METRICS_PORT', '',
    'Port of the separate Prometheus metrics listener (GET /metrics), never the API port; empty: no metrics (0 picks a free one)',
    {
      schema: Type.String({ pattern: '^(\\d{1,10})?$' }),
      refusal: metricsPortRefusal,
      parse(value): number | null {
        if (value === '') return null;
        const n = Number(value);
        if (n > 65535) throw new ConfigError(metricsPortRefusal(value));
        return n;
      },
      values: { kind: 'integer', min: 0, max: 65535 },
    },
  ),
  option('metricsHost', 'METRICS_HOST', '127.0.0.1', 'Address of the metrics listener; keep it private (0.0.0.0 or :: only where the network keeps it so)', {
    schema: Type.String({ minLength: 1 }),
    refusal: () => 'METRICS_HOST must not be empty',
    parse: (value) => value,
  }),
] as const;

type Options = (typeof OPTIONS)[number];

/** Checks between settings, which no single option's parse can make. */
function checkTogether(config: Config): void {
  if ((config.jwtIssuer !== null || config.jwtJwksUrl !== null) && config.jwtAudience === null) {
    throw new ConfigError(
      'JWT_AUDIENCE is required when JWT_ISSUER or JWT_JWKS_URL is set (the client id or API identifier your tokens are issued for): without it, a token issued for any other application of the provider would be accepted',
    );
  }
  // Metrics are never served on the API port; the same port would also fail to listen, less clearly.
  if (config.metricsPort !== null && config.metricsPort !== 0 && config.metricsPort === config.port) {
    throw new ConfigError(`METRICS_PORT must differ from PORT (${config.port}): metrics have a listener of their own`);
  }
}

function metricsPortRefusal(value: string): string {
  return `METRICS_PORT must be empty (no metrics) or a whole number from 0 to 65535, got "${value}"`;
}

function trustProxyRefusal(value: string): string {
  return `TRUST_PROXY must be off or comma-separated proxy addresses/CIDRs, got "${value}"`;
}

/** The settings, typed by the table: each key's type is what its option's parse returns. */
export type Config = { readonly [O in Options as O['key']]: ReturnType<O['parse']> };

/** An option whose flag is its variable's name in kebab case (DATABASE_URL → --database-url). */
function option<K extends string, T>(
  key: K, env: string, def: string, help: string,
  rest: Pick<Option<K, T>, 'schema' | 'refusal' | 'parse'> & { values?: OptionValues },
): Option<K, T> {
  return { key, env, flag: env.toLowerCase().replaceAll('_', '-'), default: def, help, ...rest };
}

function integerOption<K extends string>(key: K, env: string, def: string, help: string, min: number, max: number): Option<K, number> {
  const refusal = (value: string) => `${env} must be a whole number from ${min} to ${max}, got "${value}"`;
  return option(key, env, def, help, {
    // Plain digits only ("0x10", "1e2" and " 5" are refused): the range is checked on the number.
    schema: Type.String({ pattern: '^\\d{1,10}$' }),
    refusal,
    parse(value) {
      const n = Number(value);
      if (n < min || n > max) throw new ConfigError(refusal(value));
      return n;
    },
    values: { kind: 'integer', min, max },
  });
}

function durationOption<K extends string>(key: K, env: string, def: string, help: string): Option<K, number> {
  const refusal = (value: string) => `${env} must look like 30s or 2m, got "${value}"`;
  return option(key, env, def, help, {
    schema: Type.String({ pattern: DURATION.source }),
    refusal,
    parse(value) {
      const ms = parseDuration(value);
      if (ms === null) throw new ConfigError(refusal(value));
      return ms;
    },
    values: { kind: 'duration' },
  });
}

function rateOption<K extends string>(key: K, env: string, def: string, help: string): Option<K, Rate | null> {
  return option(key, env, def, help, {
    schema: Type.String({ pattern: `^(off|${RATE.source.slice(1, -1)})$` }),
    refusal: (value) => rateRefusal(env, value),
    parse: (value) => parseRate(env, value),
  });
}

function rateRefusal(name: string, value: string): string {
  return `${name} must look like 600/minute (or N/second, N/hour) or be off, got "${value}"`;
}

export function parseRate(name: string, value: string): Rate | null {
  if (value === 'off') return null;
  const m = RATE.exec(value);
  if (!m) throw new ConfigError(rateRefusal(name, value));
  return { limit: Number(m[1]), windowMs: WINDOW_MS[m[2] as keyof typeof WINDOW_MS] };
}

/**
 * The raw settings as one object schema, keyed by variable: env-schema validates them all in one pass
 * and fills in the defaults. Built once; ajv compiles it on first use and keeps the compiled validator.
 */
const RAW_SCHEMA = Type.Object(
  Object.fromEntries(OPTIONS.map((o) => [o.env, { ...o.schema, default: o.default }])),
  { additionalProperties: false },
);

/** Flags win over the environment, which wins over defaults. */
export function loadConfig(flags: Readonly<Record<string, string | undefined>> = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const given: Record<string, string> = {};
  for (const o of OPTIONS) {
    const value = flags[o.flag] ?? env[o.env];
    if (value !== undefined) given[o.env] = value;
  }
  try {
    // env: false, since the caller passes the environment (tests pass their own); our strings need no
    // coercion (every schema is a string), so env-schema's shared ajv instance is used as it is.
    let raw: Record<string, unknown>;
    try {
      raw = envSchema({ schema: RAW_SCHEMA, data: given, env: false });
    } catch (error) {
      throw refusalOf(error, given);
    }
    return configOf(raw);
  } catch (error) {
    throw error instanceof ConfigError ? asTyped(error, OPTIONS.filter((o) => flags[o.flag] !== undefined)) : error;
  }
}

/** The settings from validated raw text: each option's parse, in table order. */
function configOf(raw: Record<string, unknown>): Config {
  const config: Partial<Record<Options['key'], unknown>> = {};
  for (const o of OPTIONS) config[o.key] = o.parse(String(raw[o.env]));
  // Every key of the table is set just above, each to its parse's type, which is what Config says.
  checkTogether(config as Config);
  return config as Config;
}

/**
 * env-schema's error, as the message of the first option it names (ajv reports properties in table
 * order). Its own text ("env/PORT must match pattern …") names the pattern, not what the setting takes.
 */
function refusalOf(error: unknown, given: Readonly<Record<string, string>>): ConfigError {
  const errors = (error as { errors?: ReadonlyArray<{ instancePath: string }> }).errors ?? [];
  const name = errors[0]?.instancePath.split('/')[1];
  const o = OPTIONS.find((candidate) => candidate.env === name);
  if (o === undefined) return new ConfigError(error instanceof Error ? error.message : String(error));
  return new ConfigError(o.refusal(given[o.env] ?? o.default));
}

/** Every setting at its default, from the table above; the HTTP layer's defaults come from here. */
export const DEFAULTS: Config = loadConfig({}, {});

/** Only the database settings, for commands that need nothing else (token, migrate). */
export function loadDatabaseConfig(
  databaseUrlFlag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Pick<Config, 'database' | 'databasePoolSize' | 'databaseStartupTimeoutMs' | 'logFormat'> {
  const config = loadConfig({ 'database-url': databaseUrlFlag }, env);
  return {
    database: config.database, databasePoolSize: config.databasePoolSize, databaseStartupTimeoutMs: config.databaseStartupTimeoutMs,
    logFormat: config.logFormat,
  };
}

/**
 * LOG_LEVEL and LOG_FORMAT alone, each at its default when its own value is refused: how `serve` logs
 * a configuration it refuses (which may be one of these two).
 */
export function loadLogConfig(
  flags: Readonly<Record<string, string | undefined>>,
  env: NodeJS.ProcessEnv = process.env,
): Pick<Config, 'logLevel' | 'logFormat'> {
  const one = <K extends 'logLevel' | 'logFormat'>(key: K): Config[K] => {
    const o = OPTIONS.find((candidate) => candidate.key === key) as OptionInfo;
    try {
      return loadConfig({ [o.flag]: flags[o.flag] }, { [o.env]: env[o.env] })[key];
    } catch {
      return DEFAULTS[key];
    }
  };
  return { logLevel: one('logLevel'), logFormat: one('logFormat') };
}

/** Any option of the table, seen through the fields every option has. */
export type OptionInfo = Omit<Option<string, unknown>, 'parse' | 'refusal' | 'schema'>;

/** What a number or duration option accepts ("range 0–65535"); nothing for the others (their help says it). */
export function allowedValues(o: OptionInfo): string | undefined {
  switch (o.values?.kind) {
    case 'integer':
      return `range ${o.values.min}–${o.values.max}`;
    case 'duration':
      // The format parseDuration accepts (src/domain/duration.ts).
      return 'a duration (90s, 15m, 12h, 30d)';
    default:
      return undefined;
  }
}

/** The README's configuration table; test/contract/docs.test.ts checks that README.md contains exactly this. */
export function configTableMarkdown(): string {
  const rows = OPTIONS.map((o: OptionInfo) => {
    const allowed = allowedValues(o);
    const meaning = allowed === undefined ? o.help : `${o.help}. ${allowed[0]?.toUpperCase()}${allowed.slice(1)}.`;
    // An empty code span (``) renders as two backticks.
    const def = o.default === '' ? '(empty)' : `\`${o.default}\``;
    return `| \`${o.env}\` | \`--${o.flag}\` | ${def} | ${meaning} |`;
  });
  return ['| Variable | `serve` flag | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}
