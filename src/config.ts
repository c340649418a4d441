import { isIP } from 'node:net';
import { isAbsolute, resolve } from 'node:path';
import { parseDuration } from './domain/duration.js';

export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

/** At most `limit` events per `windowMs`, counted in fixed windows. */
export interface Rate {
  readonly limit: number;
  readonly windowMs: number;
}

/** Fastify's trustProxy: false, or the proxies' addresses/CIDRs (and proxy-addr's named ranges). */
export type TrustProxy = false | string;

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly logLevel: string;
  readonly database: DatabaseConfig;
  readonly databasePoolSize: number;
  readonly databaseStartupTimeoutMs: number;
  readonly listCachePlants: number;
  readonly accessLog: boolean;
  readonly maxBodySize: number;
  readonly maxHeaderSize: number;
  readonly maxUrlLength: number;
  readonly maxJsonDepth: number;
  readonly maxConnections: number;
  readonly requestTimeoutMs: number;
  readonly drainTimeoutMs: number;
  readonly trustProxy: TrustProxy;
  readonly corsOrigins: readonly string[];
  readonly authFailureLimit: Rate | null;
  readonly rateLimit: Rate | null;
}

export class ConfigError extends Error {}

/** What a number or duration option accepts, for `serve --help` and the README (others say so in their help). */
export type OptionValues = { readonly kind: 'integer'; readonly min: number; readonly max: number } | { readonly kind: 'duration' };

interface Option<K extends keyof Config> {
  readonly key: K;
  readonly env: string;
  readonly flag: string;
  readonly default: string;
  readonly help: string;
  readonly values?: OptionValues;
  parse(value: string): Config[K];
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Every setting, once: the environment variable, the `serve` flag, the default and the help text all
 * come from this table, and so does the README's configuration table.
 */
export const OPTIONS = [
  integerOption('port', 'PORT', '8080', 'TCP port to listen on (0 picks a free one)', 0, 65535),
  {
    key: 'host',
    env: 'HOST',
    flag: 'host',
    default: '127.0.0.1',
    help: 'Address to listen on; 0.0.0.0 or :: to accept connections from other machines',
    parse(value: string): string {
      if (value === '') throw new ConfigError('HOST must not be empty');
      return value;
    },
  } satisfies Option<'host'>,
  {
    key: 'logLevel',
    env: 'LOG_LEVEL',
    flag: 'log-level',
    default: 'info',
    help: `Log level: ${LOG_LEVELS.join(', ')}`,
    parse(value: string): string {
      if (!LOG_LEVELS.includes(value)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${value}"`);
      return value;
    },
  } satisfies Option<'logLevel'>,
  {
    key: 'database',
    env: 'DATABASE_URL',
    flag: 'database-url',
    default: 'sqlite:./data/plantstore.db',
    help: 'sqlite:PATH (relative to the working directory, or absolute) for the embedded store; postgres://… (or postgresql://…) for PostgreSQL',
    parse: parseDatabaseUrl,
  } satisfies Option<'database'>,
  integerOption(
    'databasePoolSize', 'DATABASE_POOL_SIZE', '10',
    'PostgreSQL: connections per instance (instances × this must stay below the server\'s max_connections)', 1, 1000,
  ),
  durationOption(
    'databaseStartupTimeoutMs', 'DATABASE_STARTUP_TIMEOUT', '30s',
    'PostgreSQL: how long start-up waits for the database to accept connections',
  ),
  integerOption(
    'listCachePlants', 'LIST_CACHE_PLANTS', '100000',
    'SQLite: plants kept in memory in recently listed pages, never stale; the cache also stays under 256 bytes × this, empty pages included (0 turns it off)', 0, 1_000_000_000,
  ),
  {
    key: 'accessLog',
    env: 'ACCESS_LOG',
    flag: 'access-log',
    default: 'off',
    help: 'on: log one line per request (method, URL, status, duration); off leaves that to the load balancer',
    parse(value: string): boolean {
      if (value !== 'on' && value !== 'off') throw new ConfigError(`ACCESS_LOG must be on or off, got "${value}"`);
      return value === 'on';
    },
  } satisfies Option<'accessLog'>,
  integerOption('maxBodySize', 'MAX_BODY_SIZE', '65536', 'Largest request body in bytes (larger: 413)', 1, 10 * 1024 * 1024),
  integerOption('maxHeaderSize', 'MAX_HEADER_SIZE', '16384', 'Largest request line plus headers in bytes (larger: 431)', 1024, 1024 * 1024),
  integerOption('maxUrlLength', 'MAX_URL_LENGTH', '4096', 'Longest request URL in characters (longer: 414)', 64, 1024 * 1024),
  integerOption('maxJsonDepth', 'MAX_JSON_DEPTH', '32', 'Deepest nesting of arrays and objects in a JSON body (deeper: 400)', 1, 1000),
  integerOption('maxConnections', 'MAX_CONNECTIONS', '4096', 'Open connections at most; further ones are closed at once', 1, 1_000_000),
  durationOption('requestTimeoutMs', 'REQUEST_TIMEOUT', '30s', 'A request (headers and body) must arrive within this time (else 408, connection closed)'),
  durationOption('drainTimeoutMs', 'DRAIN_TIMEOUT', '10s', 'On SIGTERM/SIGINT, how long in-flight requests may finish before their connections are closed'),
  {
    key: 'trustProxy',
    env: 'TRUST_PROXY',
    flag: 'trust-proxy',
    default: 'off',
    help: 'Proxies whose X-Forwarded-For names the client: off, or comma-separated addresses/CIDRs (loopback, uniquelocal also)',
    parse(value: string): TrustProxy {
      if (value === 'off') return false;
      const valid = (entry: string) => {
        if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
        const [address = '', prefix] = entry.split('/');
        return isIP(address) !== 0 && (prefix === undefined || /^\d{1,3}$/.test(prefix));
      };
      if (value.split(',').every((e) => valid(e.trim()))) return value;
      throw new ConfigError(`TRUST_PROXY must be off or comma-separated proxy addresses/CIDRs, got "${value}"`);
    },
  } satisfies Option<'trustProxy'>,
  {
    key: 'corsOrigins',
    env: 'CORS_ORIGINS',
    flag: 'cors-origins',
    default: '',
    help: 'Comma-separated origins (https://app.example) allowed to call from browsers; empty: CORS off',
    parse(value: string): string[] {
      const origins = value.split(',').map((o) => o.trim()).filter(Boolean);
      for (const o of origins) {
        if (!/^https?:\/\/[^/\s]+$/.test(o)) throw new ConfigError(`CORS_ORIGINS: "${o}" is not an origin like https://app.example`);
      }
      return origins;
    },
  } satisfies Option<'corsOrigins'>,
  {
    key: 'authFailureLimit',
    env: 'AUTH_FAILURE_LIMIT',
    flag: 'auth-failure-limit',
    default: '60/minute',
    help: 'Failed authentications per client address before 429 (N/second, N/minute, N/hour, or off)',
    parse: (value: string) => parseRate('AUTH_FAILURE_LIMIT', value),
  } satisfies Option<'authFailureLimit'>,
  {
    key: 'rateLimit',
    env: 'RATE_LIMIT',
    flag: 'rate-limit',
    default: 'off',
    help: 'Requests per token before 429 (N/second, N/minute, N/hour, or off); shared by all instances',
    parse: (value: string) => parseRate('RATE_LIMIT', value),
  } satisfies Option<'rateLimit'>,
] as const;

/** An option whose flag is its variable's name in kebab case (DATABASE_URL → --database-url). */
function option<K extends keyof Config>(
  key: K, env: string, def: string, help: string, parse: (value: string) => Config[K], values?: OptionValues,
): Option<K> {
  return { key, env, flag: env.toLowerCase().replaceAll('_', '-'), default: def, help, ...(values && { values }), parse };
}

function integerOption<K extends keyof Config>(key: K, env: string, def: string, help: string, min: number, max: number): Option<K> {
  return option(key, env, def, help, (value) => {
    const n = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
    if (!(n >= min && n <= max)) throw new ConfigError(`${env} must be a whole number from ${min} to ${max}, got "${value}"`);
    return n as Config[K];
  }, { kind: 'integer', min, max });
}

function durationOption<K extends keyof Config>(key: K, env: string, def: string, help: string): Option<K> {
  return option(key, env, def, help, (value) => {
    const ms = parseDuration(value);
    if (ms === null) throw new ConfigError(`${env} must look like 30s or 2m, got "${value}"`);
    return ms as Config[K];
  }, { kind: 'duration' });
}

const RATE = /^([1-9]\d{0,8})\/(second|minute|hour)$/;
const WINDOW_MS = { second: 1000, minute: 60_000, hour: 3_600_000 } as const;

export function parseRate(name: string, value: string): Rate | null {
  if (value === 'off') return null;
  const m = RATE.exec(value);
  if (!m) throw new ConfigError(`${name} must look like 600/minute (or N/second, N/hour) or be off, got "${value}"`);
  return { limit: Number(m[1]), windowMs: WINDOW_MS[m[2] as keyof typeof WINDOW_MS] };
}

export function parseDatabaseUrl(value: string): DatabaseConfig {
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length);
    if (path === '' || path === ':memory:') {
      throw new ConfigError('DATABASE_URL sqlite: needs a file path (an in-memory store would not be durable)');
    }
    return { kind: 'sqlite', path: isAbsolute(path) ? path : resolve(path) };
  }
  if (/^postgres(ql)?:\/\//.test(value)) return { kind: 'postgres', url: value };
  // The value may hold a password, so it is not repeated in the message.
  throw new ConfigError('DATABASE_URL must start with sqlite:, postgres:// or postgresql://');
}

/** Flags win over the environment, which wins over defaults. */
export function loadConfig(flags: Readonly<Record<string, string | undefined>> = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const entries = OPTIONS.map((o) => {
    const raw = flags[o.flag] ?? env[o.env] ?? o.default;
    return [o.key, o.parse(raw)] as const;
  });
  return Object.fromEntries(entries) as unknown as Config;
}

/** Every setting at its default, from the table above; the HTTP layer's defaults come from here. */
export const DEFAULTS: Config = loadConfig({}, {});

/** Only the database settings, for commands that need nothing else (token, migrate). */
export function loadDatabaseConfig(
  databaseUrlFlag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Pick<Config, 'database' | 'databasePoolSize' | 'databaseStartupTimeoutMs'> {
  const config = loadConfig({ 'database-url': databaseUrlFlag }, env);
  return { database: config.database, databasePoolSize: config.databasePoolSize, databaseStartupTimeoutMs: config.databaseStartupTimeoutMs };
}

/** Any option of the table, seen through the fields every option has. */
export type OptionInfo = Omit<Option<keyof Config>, 'parse'>;

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

/** The README's configuration table; test/docs.test.ts checks that README.md contains exactly this. */
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
