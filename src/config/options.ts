import { Type, type TSchema } from 'typebox';
import { DURATION, DURATION_RULE, parseDuration } from '../domain/duration.js';
import { oneLine, shownUrl } from '../domain/shown.js';
import { DATABASE_URL_REFUSAL, parseDatabaseUrl, showDatabaseUrl } from './database.js';
import { ConfigError } from './error.js';
import {
  JWT_ALGORITHMS, LOG_FORMATS, LOG_LEVELS, parseJwtAlgorithms, parseJwtDefaultScopes, parseRate, parseTrustProxy, providerUrlProblem, RATE,
  rateRefusal, trustProxyRefusal, type LogFormatSetting, type Rate,
} from './values.js';

/** What a number or duration option accepts, for `serve --help` and docs/configuration.md (others say so in their help). */
export type OptionValues =
  | { readonly kind: 'integer'; readonly min: number; readonly max: number }
  /** `positive`: a zero is refused, where it would turn a limit off or fail every attempt. */
  | { readonly kind: 'duration'; readonly positive: boolean };

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
  /**
   * How the value is shown (doctor, `serve --help`) when it may hold a secret: with the secret masked.
   * `cwd` as parse's.
   */
  readonly show?: (value: string, cwd: string) => string;
  readonly schema: TSchema;
  /** The message when the text does not have the schema's shape; it names the variable. */
  refusal(value: string): string;
  /** `cwd`: the working directory of the command, what a relative path in the value is relative to. */
  parse(value: string, cwd: string): T;
}

/**
 * Every setting, once: the environment variable, the `serve` flag, the default, the help text and the
 * schema of its raw text all come from this table, and so do docs/configuration.md's table and the
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
      show: showDatabaseUrl,
    },
  ),
  integerOption(
    'databasePoolSize', 'DATABASE_POOL_SIZE', '10',
    'PostgreSQL: connections per instance, opened as needed and kept; each serving instance opens one more, to hear other instances\' webhook events (instances × (this + 1) must stay below the server\'s max_connections)', 1, 1000,
  ),
  durationOption(
    'databaseStartupTimeoutMs', 'DATABASE_STARTUP_TIMEOUT', '30s',
    'PostgreSQL: how long start-up waits for the database to accept connections',
  ),
  integerOption(
    'listCachePlants', 'LIST_CACHE_PLANTS', '100000',
    'SQLite: plants kept in memory in recently listed pages, never stale; the cache also stays under 256 bytes × this, empty pages included (0 turns it off)', 0, 1_000_000_000,
  ),
  onOffOption(
    'accessLog', 'ACCESS_LOG', 'off',
    'on: log one line per request (method, URL, status, duration); off leaves that to the load balancer',
  ),
  onOffOption(
    'docs', 'DOCS', 'on',
    'on: serve the interactive API reference (Swagger UI, every file from this server) at /docs; off: /docs is 404',
  ),
  integerOption('maxBodySize', 'MAX_BODY_SIZE', '65536', 'Largest request body in bytes (larger: 413)', 1, 10 * 1024 * 1024),
  integerOption('maxHeaderSize', 'MAX_HEADER_SIZE', '16384', 'Largest request line plus headers in bytes (larger: 431)', 1024, 1024 * 1024),
  integerOption('maxUrlLength', 'MAX_URL_LENGTH', '4096', 'Longest request URL in characters (longer: 414)', 64, 1024 * 1024),
  integerOption('maxJsonDepth', 'MAX_JSON_DEPTH', '32', 'Deepest nesting of arrays and objects in a JSON body (deeper: 400)', 1, 1000),
  integerOption('maxConnections', 'MAX_CONNECTIONS', '4096', 'Open connections at most; further ones are closed at once, unanswered. From 7/8 of it on, a connection with no request in progress is closed after 1 s of silence (else at the keep-alive timeout, 72 s), and MAX_CONNECTIONS_PER_ADDRESS applies', 1, 1_000_000),
  integerOption('maxConnectionsPerAddress', 'MAX_CONNECTIONS_PER_ADDRESS', '256', 'Open connections from one client address (an IPv6 client: its /64) at most, once 7/8 of MAX_CONNECTIONS are open (below that, any number): a further one is answered 503 (50303) and closed, and the address\'s idle connections over it are closed first. TRUST_PROXY\'s proxies are not limited (0 turns the limit off)', 0, 1_000_000),
  // Positive: Node's HTTP server reads a request timeout of 0 as none at all.
  durationOption('requestTimeoutMs', 'REQUEST_TIMEOUT', '30s', 'A request (headers and body) must arrive within this time (else 408, connection closed)', { positive: true }),
  durationOption('drainTimeoutMs', 'DRAIN_TIMEOUT', '10s', 'On SIGTERM/SIGINT, how long in-flight requests may finish before their connections are closed'),
  option(
    'trustProxy', 'TRUST_PROXY', 'off',
    'Proxies whose X-Forwarded-For names the client: off, or comma-separated addresses/CIDRs (loopback, uniquelocal also). An entry is read without a port or brackets; one that cannot be read counts as the proxy that wrote it',
    {
      // Not empty; each entry is checked in parse, where an IPv6 zone id (%eth0) can be told apart.
      schema: Type.String({ minLength: 1 }),
      refusal: trustProxyRefusal,
      parse: parseTrustProxy,
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
  onOffOption(
    'webhookAllowPrivate', 'WEBHOOK_ALLOW_PRIVATE', 'off',
    'on: webhooks may call loopback, private, link-local and other internal addresses (local development and tests only); off refuses them at registration and at every delivery',
  ),
  integerOption('webhookMaxPerUser', 'WEBHOOK_MAX_PER_USER', '10', 'Webhook endpoints one user may register', 1, 10_000),
  integerOption(
    'webhookMaxQueuedPerUser', 'WEBHOOK_MAX_QUEUED_PER_USER', '10000',
    'Events one user\'s test, resend and recover may have queued (not yet delivered, nor failed for good) at once, on all of the user\'s endpoints; past it they are refused with 409 (the CLI is not held to it)',
    1, 10_000_000,
  ),
  // Positive: with no time to answer, every attempt would fail.
  durationOption(
    'feedRetentionMs', 'FEED_RETENTION', '24h',
    'The live feed (GET /plants/events) keeps events this long: a client resumes from an id up to this old; older is 410 (list again)', { positive: true },
  ),
  durationOption('feedHeartbeatMs', 'FEED_HEARTBEAT', '15s', 'A comment line is sent on every open feed stream this often, so that proxies keep it open', { positive: true }),
  integerOption('feedMaxStreams', 'FEED_MAX_STREAMS', '2048', 'Feed streams open at once on one instance; further ones are answered 503 (50304)', 1, 1_000_000),
  integerOption(
    'feedMaxStreamsPerToken', 'FEED_MAX_STREAMS_PER_TOKEN', '10',
    'Feed streams one token (a JWT: one user) may have open at once on one instance; further ones are answered 429 (42902)', 1, 1_000_000,
  ),
  durationOption('webhookTimeoutMs', 'WEBHOOK_TIMEOUT', '10s', 'A webhook receiver must answer 2xx within this time, else the attempt failed', { positive: true }),
  option(
    'webhookRetryScheduleMs', 'WEBHOOK_RETRY_SCHEDULE', '5s,5m,30m,2h,5h,10h,10h',
    'Delays before each retry of a failed webhook delivery, comma-separated (each with up to 10% jitter); after the last, the event is failed',
    {
      schema: Type.String({ pattern: `^${DURATION.source.slice(1, -1)}(,${DURATION.source.slice(1, -1)}){0,19}$` }),
      refusal: (value) => `WEBHOOK_RETRY_SCHEDULE must be up to 20 comma-separated durations like 0s,5m,2h, got "${value}"`,
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

/** The table's options, each with its own key and value type: Config (load.ts) is made of them. */
export type TableOption = (typeof OPTIONS)[number];

function metricsPortRefusal(value: string): string {
  return `METRICS_PORT must be empty (no metrics) or a whole number from 0 to 65535, got "${value}"`;
}

/** An option whose flag is its variable's name in kebab case (DATABASE_URL → --database-url). */
function option<K extends string, T>(
  key: K, env: string, def: string, help: string,
  rest: Pick<Option<K, T>, 'schema' | 'refusal' | 'parse' | 'show'> & { values?: OptionValues },
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

/** A duration setting: the one grammar (domain/duration.ts), zero included unless `positive`. */
function durationOption<K extends string>(
  key: K, env: string, def: string, help: string, { positive = false }: { positive?: boolean } = {},
): Option<K, number> {
  const refusal = (value: string) => `${env} ${DURATION_RULE}, got "${value}"`;
  return option(key, env, def, help, {
    schema: Type.String({ pattern: DURATION.source }),
    refusal,
    parse(value) {
      const ms = parseDuration(value);
      if (ms === null) throw new ConfigError(refusal(value));
      if (positive && ms === 0) throw new ConfigError(`${env} must be more than 0, got "${value}"`);
      return ms;
    },
    values: { kind: 'duration', positive },
  });
}

/** on or off, read as true or false. */
function onOffOption<K extends string>(key: K, env: string, def: 'on' | 'off', help: string): Option<K, boolean> {
  return option(key, env, def, help, {
    schema: Type.String({ enum: ['on', 'off'] }),
    refusal: (value) => `${env} must be on or off, got "${value}"`,
    parse: (value) => value === 'on',
  });
}

function rateOption<K extends string>(key: K, env: string, def: string, help: string): Option<K, Rate | null> {
  return option(key, env, def, help, {
    schema: Type.String({ pattern: `^(off|${RATE.source.slice(1, -1)})$` }),
    refusal: (value) => rateRefusal(env, value),
    parse: (value) => parseRate(env, value),
  });
}

function providerUrlOption<K extends string>(key: K, env: string, help: string): Option<K, string | null> {
  // The value is repeated in a refusal only as shownUrl shows it: it may hold a password.
  return option(key, env, '', help, {
    schema: Type.String(),
    refusal: (value) => `${env} must be an https:// URL, got "${shownUrl(value)}"`,
    parse(value) {
      if (value === '') return null;
      const problem = providerUrlProblem(value);
      if (problem) throw new ConfigError(`${env} ${problem}, got "${shownUrl(value)}"`);
      return value;
    },
    show: shownUrl,
  });
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
      return o.values.positive ? 'a duration more than 0 (90s, 15m, 12h, 30d)' : 'a duration (0, 90s, 15m, 12h, 30d)';
    default:
      return undefined;
  }
}

/**
 * A setting's text as it may be shown: a password in it masked, control characters escaped (shown.ts).
 * `cwd` as the settings were read with.
 */
export function shownValue(o: OptionInfo, value: string, cwd: string): string {
  return oneLine(o.show === undefined ? value : o.show(value, cwd));
}
