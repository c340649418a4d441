import envSchema from 'env-schema';
import { Type } from 'typebox';
import { asTyped, ConfigError } from './error.js';
import { CONFIG_FILE_VARIABLE, readSettingsFile, type SettingsFile } from './file.js';
import { OPTIONS, type OptionInfo, type TableOption } from './options.js';

/** The settings, typed by the table: each key's type is what its option's parse returns. */
export type Config = { readonly [O in TableOption as O['key']]: ReturnType<O['parse']> };

/**
 * Checks between settings, which no single option's parse can make. `refuse` makes the refusal, given
 * the settings it is about, so that those from the settings file are named with their line.
 */
function checkTogether(config: Config, refuse: (message: string, about: readonly string[]) => ConfigError): void {
  if ((config.jwtIssuer !== null || config.jwtJwksUrl !== null) && config.jwtAudience === null) {
    throw refuse(
      'JWT_AUDIENCE is required when JWT_ISSUER or JWT_JWKS_URL is set (the client id or API identifier your tokens are issued for): without it, a token issued for any other application of the provider would be accepted',
      [...(config.jwtIssuer !== null ? ['JWT_ISSUER'] : []), ...(config.jwtJwksUrl !== null ? ['JWT_JWKS_URL'] : [])],
    );
  }
  // Metrics are never served on the API port; the same port would also fail to listen, less clearly.
  if (config.metricsPort !== null && config.metricsPort !== 0 && config.metricsPort === config.port) {
    throw refuse(`METRICS_PORT must differ from PORT (${config.port}): metrics have a listener of their own`, ['METRICS_PORT', 'PORT']);
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

/** Where a setting's value came from. */
export type SettingSource =
  | { readonly kind: 'default' }
  | { readonly kind: 'file'; readonly file: string; readonly line: number }
  | { readonly kind: 'env' }
  | { readonly kind: 'flag' };

/** The settings, each with its source and the text it was given as (defaults excluded). */
export interface Settings {
  readonly config: Config;
  /** By variable name (PORT): every setting of the table. */
  readonly sources: Readonly<Record<string, SettingSource>>;
  /** By variable name: the text of each setting given by a flag, the environment or the file. */
  readonly given: Readonly<Record<string, string>>;
  /** The settings file read, as it was named; null when none was. */
  readonly file: string | null;
  /** The working directory they were read in: what a relative path among them is relative to. */
  readonly cwd: string;
}

/** How a source is named in messages, doctor and `serve --help`. */
export function sourceName(source: SettingSource): string {
  switch (source.kind) {
    case 'file':
      return `${source.file}:${source.line}`;
    case 'env':
      return 'environment';
    default:
      return source.kind;
  }
}

const KNOWN_VARIABLES = OPTIONS.map((o) => o.env);

/**
 * The settings file that `env` names (PLANTSTORE_CONFIG), read; undefined when it names none. A relative
 * name is relative to `cwd`.
 */
function settingsFileOf(env: NodeJS.ProcessEnv, cwd: string): SettingsFile | undefined {
  const path = env[CONFIG_FILE_VARIABLE];
  return path === undefined || path === '' ? undefined : readSettingsFile(path, KNOWN_VARIABLES, cwd);
}

/**
 * Flags win over the environment, which wins over the settings file, which wins over defaults. `cwd` is
 * the command's working directory (the CLI's io.cwd), given rather than read from the process, so that
 * a command run in a test's process finds the files its own directory holds.
 */
export function loadConfig(flags: Readonly<Record<string, string | undefined>>, env: NodeJS.ProcessEnv, cwd: string): Config {
  return loadSettings(flags, env, cwd).config;
}

/** loadConfig, with where each value came from. */
export function loadSettings(flags: Readonly<Record<string, string | undefined>>, env: NodeJS.ProcessEnv, cwd: string): Settings {
  const file = settingsFileOf(env, cwd);
  const given: Record<string, string> = {};
  const sources: Record<string, SettingSource> = {};
  for (const o of OPTIONS) {
    const fromFile = file?.settings.get(o.env);
    const [value, source]: [string | undefined, SettingSource] =
      flags[o.flag] !== undefined ? [flags[o.flag], { kind: 'flag' }]
      : env[o.env] !== undefined ? [env[o.env], { kind: 'env' }]
      : fromFile !== undefined && file !== undefined ? [fromFile.value, { kind: 'file', file: file.name, line: fromFile.line }]
      : [undefined, { kind: 'default' }];
    sources[o.env] = source;
    if (value !== undefined) given[o.env] = value;
  }
  // A refusal of a value from the file says where it is: "/etc/plantstore.env:3: PORT must be …".
  const located = (error: ConfigError, o: OptionInfo | undefined) => {
    const source = o === undefined ? undefined : sources[o.env];
    return source?.kind === 'file' ? new ConfigError(`${sourceName(source)}: ${error.message}`) : error;
  };
  // A refusal about several settings names those the file gave with their lines, after the message.
  const refuseTogether = (message: string, about: readonly string[]) => {
    const fromFile = about.flatMap((name) => {
      const source = sources[name];
      return source?.kind === 'file' ? [`${name} at ${sourceName(source)}`] : [];
    });
    return new ConfigError(fromFile.length === 0 ? message : `${message} (${fromFile.join(', ')})`);
  };
  try {
    // env: false, since the caller passes the environment (tests pass their own); our strings need no
    // coercion (every schema is a string), so env-schema's shared ajv instance is used as it is.
    let raw: Record<string, unknown>;
    try {
      raw = envSchema({ schema: RAW_SCHEMA, data: given, env: false });
    } catch (error) {
      const { refusal, option } = refusalOf(error, given);
      throw located(refusal, option);
    }
    return { config: configOf(raw, cwd, located, refuseTogether), sources, given, file: file?.name ?? null, cwd };
  } catch (error) {
    throw error instanceof ConfigError ? asTyped(error, OPTIONS.filter((o) => flags[o.flag] !== undefined)) : error;
  }
}

/** The settings from validated raw text: each option's parse, in table order. */
function configOf(
  raw: Record<string, unknown>,
  cwd: string,
  located: (error: ConfigError, o: OptionInfo) => ConfigError,
  refuseTogether: (message: string, about: readonly string[]) => ConfigError,
): Config {
  const config: Partial<Record<TableOption['key'], unknown>> = {};
  for (const o of OPTIONS) {
    try {
      config[o.key] = o.parse(String(raw[o.env]), cwd);
    } catch (error) {
      throw error instanceof ConfigError ? located(error, o) : error;
    }
  }
  // Every key of the table is set just above, each to its parse's type, which is what Config says.
  checkTogether(config as Config, refuseTogether);
  return config as Config;
}

/**
 * env-schema's error, as the message of the first option it names (ajv reports properties in table
 * order). Its own text ("env/PORT must match pattern …") names the pattern, not what the setting takes.
 */
function refusalOf(error: unknown, given: Readonly<Record<string, string>>): { refusal: ConfigError; option: OptionInfo | undefined } {
  const errors = (error as { errors?: ReadonlyArray<{ instancePath: string }> }).errors ?? [];
  const name = errors[0]?.instancePath.split('/')[1];
  const o = OPTIONS.find((candidate) => candidate.env === name);
  if (o === undefined) return { refusal: new ConfigError(error instanceof Error ? error.message : String(error)), option: undefined };
  return { refusal: new ConfigError(o.refusal(given[o.env] ?? o.default)), option: o };
}

/**
 * Every setting at its default but the store's place, from the table (options.ts); the HTTP layer's
 * defaults come from here. The default store path is relative, so only a command's working directory
 * places it: read here, the root stands in for one, and the store is left out.
 */
export const DEFAULTS: Omit<Config, 'database'> = (({ database: _unplaced, ...rest }: Config) => rest)(loadConfig({}, {}, '/'));

/** Only the database settings, for commands that need nothing else (token, migrate). */
export function loadDatabaseConfig(
  databaseUrlFlag: string | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string,
): Pick<Config, 'database' | 'databasePoolSize' | 'databaseStartupTimeoutMs' | 'logFormat'> {
  const config = loadConfig({ 'database-url': databaseUrlFlag }, env, cwd);
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
  env: NodeJS.ProcessEnv,
  cwd: string,
): Pick<Config, 'logLevel' | 'logFormat'> {
  let file: SettingsFile | undefined;
  try {
    file = settingsFileOf(env, cwd);
  } catch {
    // The file is refused (that is then what is logged): its two settings are read where they can be.
  }
  const defaults: Pick<Config, 'logLevel' | 'logFormat'> = DEFAULTS;
  const one = <K extends 'logLevel' | 'logFormat'>(key: K): (typeof defaults)[K] => {
    const o = OPTIONS.find((candidate) => candidate.key === key) as OptionInfo;
    try {
      return loadConfig({ [o.flag]: flags[o.flag] }, { [o.env]: env[o.env] ?? file?.settings.get(o.env)?.value }, cwd)[key];
    } catch {
      return defaults[key];
    }
  };
  return { logLevel: one('logLevel'), logFormat: one('logFormat') };
}
