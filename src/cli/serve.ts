import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { ConfigError } from '../config/error.js';
import { loadConfig, loadLogConfig, loadSettings, type Config, type Settings } from '../config/load.js';
import { OPTIONS } from '../config/options.js';
import { streamLogger } from '../logger.js';
import { OptionError, parse, UsageError } from './args.js';
import { helpWidth, serveHelp } from './help.js';
import { LoggedError, type Cli } from './io.js';

const SERVE_FLAGS = Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: 'string' as const }]));

/** The flags' values as far as they can be read from arguments that are refused (to log the refusal as asked). */
function flagsOf(args: string[]): Record<string, string | undefined> {
  try {
    const { values } = parseArgs({ args, options: SERVE_FLAGS, strict: false, allowPositionals: true });
    return Object.fromEntries(Object.entries(values).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
  } catch {
    return {};
  }
}

/** What `serve --help` shows of the settings in effect: them, or why they are refused. */
function settingsOrRefusal(flags: Readonly<Record<string, string | undefined>>, env: Cli['env'], cwd: string): Settings | string {
  try {
    return loadSettings(flags, env, cwd);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
}

/**
 * The fatal line that ends `serve`: the message alone for what the operator has to fix (a refused
 * setting, a port in use, a store that cannot open), the error with its stack for anything else.
 */
function fatal(logger: Logger, error: unknown, expected: boolean, exitCode: number): LoggedError {
  if (expected) logger.fatal((error as Error).message);
  else logger.fatal({ err: error }, 'start-up failed');
  return new LoggedError(exitCode);
}

/**
 * Everything `serve` writes is a log line in one format (LOG_FORMAT), for whatever reads its output;
 * a refused command line or configuration too, with exit code 2, logged with LOG_FORMAT and LOG_LEVEL
 * when those two are valid themselves (their defaults otherwise). Only --help prints plain text.
 */
export async function serveCommand(args: string[], cli: Cli): Promise<void> {
  let config: Config;
  try {
    const { values } = parse(args, SERVE_FLAGS);
    const flags = Object.fromEntries(OPTIONS.map((o) => [o.flag, values[o.flag] as string | undefined]));
    if (values.help) return void cli.print(serveHelp(settingsOrRefusal(flags, cli.env, cli.cwd), helpWidth(cli.stdout)));
    config = loadConfig(flags, cli.env, cli.cwd);
  } catch (error) {
    const settings = loadLogConfig(flagsOf(args), cli.env, cli.cwd);
    const refused = error instanceof OptionError ? new OptionError(error.withHelp('serve')) : error;
    throw fatal(streamLogger(settings.logLevel, settings.logFormat, cli.stdout), refused, error instanceof UsageError || error instanceof ConfigError, 2);
  }
  const logger = streamLogger(config.logLevel, config.logFormat, cli.stdout);
  // Loaded here so that token and migrate commands do not pay for loading the HTTP stack.
  const { serve, StartupError } = await import('../server.js');
  try {
    await serve(config, logger);
  } catch (error) {
    throw fatal(logger, error, error instanceof StartupError, 1);
  }
}
