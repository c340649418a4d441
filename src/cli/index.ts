import { ConfigError } from '../config/error.js';
import { CONFIG_FILE_VARIABLE } from '../config/file.js';
import { TokenRequestError } from '../domain/token.js';
import { packageVersion } from '../version.js';
import { OptionError, takeConfigOption, UsageError } from './args.js';
import { COMMANDS, GROUPS, mainHelp } from './commands.js';
import { cliOf, LoggedError, type CliIo } from './io.js';

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
      cli.print(mainHelp());
      return first === undefined ? 2 : 0;
    }
    const group = Object.hasOwn(GROUPS, first) ? first : undefined;
    if (group !== undefined && (second === undefined || second === '--help' || second === '-h')) {
      cli.print(await (GROUPS[group] as () => Promise<string>)());
      return second === undefined ? 2 : 0;
    }
    name = group === undefined ? first : `${group} ${second}`;
    const command = COMMANDS.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command "${name}"\n\n${mainHelp()}`);
    const code = await command.run(group === undefined ? argv.slice(1) : rest, cli);
    return typeof code === 'number' ? code : 0;
  } catch (error) {
    if (error instanceof LoggedError) return error.exitCode;
    const usage = error instanceof UsageError || error instanceof ConfigError || error instanceof TokenRequestError;
    cli.warn(`plantstore: ${error instanceof OptionError ? error.withHelp(name) : (error as Error).message}`);
    return usage ? 2 : 1;
  }
}
