import { ConfigError } from '../config/error.js';
import { CONFIG_FILE_VARIABLE } from '../config/load.js';
import { TokenRequestError } from '../domain/token.js';
import { packageVersion } from '../version.js';
import { OptionError, takeConfigOption, UsageError } from './args.js';
import { backupCommand, exportCommand, importCommand, migrateCommand } from './data.js';
import { doctorCommand } from './doctor.js';
import { mainHelp, type CommandSummary } from './help.js';
import { cliOf, type Cli, type CliIo } from './io.js';
import { LoggedError, serveCommand } from './serve.js';
import { TOKEN_HELP, tokenCreate, tokenList, tokenRevoke } from './token.js';
import { WEBHOOK_COMMANDS, WEBHOOK_HELP } from './webhook.js';

interface Command extends CommandSummary {
  /**
   * Runs the command with the arguments after its name; a refusal is thrown (see main). A command that
   * has said what it found (doctor) may return its exit code. It reads and writes only through `cli`.
   */
  readonly run: (args: string[], cli: Cli) => Promise<void | number>;
}

/** Every command, in the order the main help lists them. */
const COMMANDS: readonly Command[] = [
  { name: 'serve', summary: 'Run the HTTP service (migrations run at start)', run: serveCommand },
  { name: 'doctor', summary: 'Check the store, settings, PostgreSQL, identity provider and webhooks; writes nothing', run: doctorCommand },
  { name: 'migrate', summary: 'Apply pending database migrations and exit', run: migrateCommand },
  { name: 'token create', summary: 'Create a bearer token (printed once, on the last line of stdout)', run: tokenCreate },
  { name: 'token list', summary: 'List tokens (never their secrets)', run: tokenList },
  { name: 'token revoke', args: 'ID', summary: 'Revoke a token', run: tokenRevoke },
  ...WEBHOOK_COMMANDS,
  { name: 'export', args: '[--out FILE]', summary: 'Write the whole store as NDJSON (a backup, or a move to another store)', run: exportCommand },
  { name: 'import', args: 'FILE', summary: 'Load an export into the store (SQLite or PostgreSQL)', run: importCommand },
  {
    name: 'backup', args: '--out FILE',
    summary: 'Copy a SQLite store to FILE, consistently, while the server runs (PostgreSQL: pg_dump)', run: backupCommand,
  },
];

/** Commands with subcommands ("token create"): the help shown for the group alone, or with --help. */
const GROUPS: Readonly<Record<string, string>> = { token: TOKEN_HELP, webhook: WEBHOOK_HELP };

const MAIN_HELP = mainHelp(COMMANDS);

/**
 * Runs one command line and resolves with its exit code; it never exits, and reads and writes only
 * what `io` gives it (bin/plantstore.js: the process's own; a test: its streams). `serve` resolves once
 * the server is up, and the server goes on in this process until a signal stops it.
 */
export async function main(commandLine: string[], io: CliIo): Promise<number> {
  let name = '';
  let cli = cliOf(io);
  try {
    const { args: argv, file } = takeConfigOption(commandLine);
    // Named to the settings loader as PLANTSTORE_CONFIG names it, so that every command reads it, through
    // whichever loader it uses (config/load.ts); the flag wins over the variable, as flags do.
    if (file !== undefined) cli = cliOf({ ...io, env: { ...io.env, [CONFIG_FILE_VARIABLE]: file } });
    const [first, second, ...rest] = argv;
    if (first === '--version' || first === '-v' || first === 'version') {
      cli.print(`plantstore ${packageVersion()}`);
      return 0;
    }
    if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
      cli.print(MAIN_HELP);
      return first === undefined ? 2 : 0;
    }
    const group = Object.hasOwn(GROUPS, first) ? first : undefined;
    if (group !== undefined && (second === undefined || second === '--help' || second === '-h')) {
      cli.print(GROUPS[group] as string);
      return second === undefined ? 2 : 0;
    }
    name = group === undefined ? first : `${group} ${second}`;
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command "${name}"\n\n${MAIN_HELP}`);
    const code = await command.run(group === undefined ? argv.slice(1) : rest, cli);
    return typeof code === 'number' ? code : 0;
  } catch (error) {
    if (error instanceof LoggedError) return error.exitCode;
    const usage = error instanceof UsageError || error instanceof ConfigError || error instanceof TokenRequestError;
    cli.warn(`plantstore: ${error instanceof OptionError ? error.withHelp(name) : (error as Error).message}`);
    return usage ? 2 : 1;
  }
}
