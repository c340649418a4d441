import { isAbsolute, resolve } from 'node:path';
import { parseDuration } from './domain/duration.js';

export type DatabaseConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly logLevel: string;
  readonly database: DatabaseConfig;
  readonly databasePoolSize: number;
  readonly databaseStartupTimeoutMs: number;
  readonly listCachePlants: number;
  readonly accessLog: boolean;
  readonly rateLimit: 'off';
}

export class ConfigError extends Error {}

interface Option<K extends keyof Config> {
  readonly key: K;
  readonly env: string;
  readonly flag: string;
  readonly default: string;
  readonly help: string;
  parse(value: string): Config[K];
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Every setting, once: the environment variable, the `serve` flag, the default and the help text all
 * come from this table, and so does the README's configuration table.
 */
export const OPTIONS = [
  {
    key: 'port',
    env: 'PORT',
    flag: 'port',
    default: '8080',
    help: 'TCP port to listen on (0 picks a free one)',
    parse(value: string): number {
      if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) throw new ConfigError(`PORT must be 0-65535, got "${value}"`);
      return Number(value);
    },
  } satisfies Option<'port'>,
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
  {
    key: 'databasePoolSize',
    env: 'DATABASE_POOL_SIZE',
    flag: 'database-pool-size',
    default: '10',
    help: 'PostgreSQL: connections per instance (instances × this must stay below the server\'s max_connections)',
    parse(value: string): number {
      if (!/^\d{1,4}$/.test(value) || Number(value) < 1 || Number(value) > 1000) {
        throw new ConfigError(`DATABASE_POOL_SIZE must be 1-1000, got "${value}"`);
      }
      return Number(value);
    },
  } satisfies Option<'databasePoolSize'>,
  {
    key: 'databaseStartupTimeoutMs',
    env: 'DATABASE_STARTUP_TIMEOUT',
    flag: 'database-startup-timeout',
    default: '30s',
    help: 'PostgreSQL: how long start-up waits for the database to accept connections (90s, 2m, …)',
    parse(value: string): number {
      const ms = parseDuration(value);
      if (ms === null) throw new ConfigError(`DATABASE_STARTUP_TIMEOUT must look like 30s or 2m, got "${value}"`);
      return ms;
    },
  } satisfies Option<'databaseStartupTimeoutMs'>,
  {
    key: 'listCachePlants',
    env: 'LIST_CACHE_PLANTS',
    flag: 'list-cache-plants',
    default: '100000',
    help: 'SQLite: plants kept in memory in recently listed pages, never stale (0 turns the cache off)',
    parse(value: string): number {
      if (!/^\d{1,9}$/.test(value)) throw new ConfigError(`LIST_CACHE_PLANTS must be a whole number, got "${value}"`);
      return Number(value);
    },
  } satisfies Option<'listCachePlants'>,
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
  {
    key: 'rateLimit',
    env: 'RATE_LIMIT',
    flag: 'rate-limit',
    default: 'off',
    help: 'Per-token request rate limit; only "off" for now',
    parse(value: string): 'off' {
      if (value !== 'off') throw new ConfigError(`RATE_LIMIT: only "off" is supported in this version, got "${value}"`);
      return value;
    },
  } satisfies Option<'rateLimit'>,
] as const;

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

/** Only the database settings, for commands that need nothing else (token, migrate). */
export function loadDatabaseConfig(
  databaseUrlFlag: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Pick<Config, 'database' | 'databasePoolSize' | 'databaseStartupTimeoutMs'> {
  const config = loadConfig({ 'database-url': databaseUrlFlag }, env);
  return { database: config.database, databasePoolSize: config.databasePoolSize, databaseStartupTimeoutMs: config.databaseStartupTimeoutMs };
}

/** The README's configuration table; test/docs.test.ts checks that README.md contains exactly this. */
export function configTableMarkdown(): string {
  const rows = OPTIONS.map((o) => `| \`${o.env}\` | \`--${o.flag}\` | \`${o.default}\` | ${o.help} |`);
  return ['| Variable | `serve` flag | Default | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}
