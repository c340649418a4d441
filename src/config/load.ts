import envSchema from 'env-schema';
import { Type } from 'typebox';
import { asTyped, ConfigError } from './error.js';
import { OPTIONS, type OptionInfo, type TableOption } from './options.js';

/** The settings, typed by the table: each key's type is what its option's parse returns. */
export type Config = { readonly [O in TableOption as O['key']]: ReturnType<O['parse']> };

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
  const config: Partial<Record<TableOption['key'], unknown>> = {};
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

/** Every setting at its default, from the table (options.ts); the HTTP layer's defaults come from here. */
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
