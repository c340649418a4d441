import { parseArgs, type ParseArgsConfig } from 'node:util';
import { nearestName } from '../domain/nearest.js';

/** A mistake in how the command was called: message on stderr, exit code 2. */
export class UsageError extends Error {}

/** A mistake in the options themselves (unknown, or missing its value): the command's --help says what it takes. */
export class OptionError extends UsageError {
  /** The message with where to look: `plantstore token create --help`. */
  withHelp(command: string): string {
    return `${this.message}; see "plantstore ${command} --help"`;
  }
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * What node:util's refusal means, said in the command's terms: an unknown option with the nearest
 * known one, an option without its value. Node's own words for the second ("argument is ambiguous")
 * describe its parser, not the mistake. Undefined for anything else.
 */
function explain(args: string[], options: Options): string | undefined {
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true });
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const option = options[token.name];
    if (option === undefined) {
      const known = Object.keys(options).map((name) => `--${name}`);
      const guess = token.rawName.startsWith('--') ? nearestName(token.rawName, known) : undefined;
      return `unknown option ${token.rawName}${guess ? ` (did you mean ${guess}?)` : ''}`;
    }
    if (option.type !== 'string') continue;
    if (token.value === undefined) return `${token.rawName} needs a value`;
    if (!token.inlineValue && token.value.startsWith('-') && token.value !== '-') {
      return `${token.rawName} needs a value (${token.value} was read as an option; a value starting with "-" is written ${token.rawName}=${token.value})`;
    }
  }
  return undefined;
}

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

/** What `parse` returns: node:util's result for these options, --help included. */
export type Parsed<T extends Options> = ReturnType<typeof parseArgs<{ args: string[]; options: T & typeof HELP_OPTION; allowPositionals: boolean; strict: true }>>;

export function parse<T extends Options>(args: string[], options: T, allowPositionals = false): Parsed<T> {
  const all = { ...options, ...HELP_OPTION };
  try {
    return parseArgs({ args, options: all, allowPositionals, strict: true });
  } catch (error) {
    const explained = explain(args, all);
    if (explained !== undefined) throw new OptionError(explained);
    throw new UsageError((error as Error).message);
  }
}

/**
 * `--config FILE` (or `--config=FILE`), which every command takes, wherever it is before a `--`: the
 * other arguments, and FILE.
 */
export function takeConfigOption(argv: readonly string[]): { readonly args: string[]; readonly file: string | undefined } {
  const args: string[] = [];
  let file: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      args.push(...argv.slice(i));
      break;
    }
    let value: string | undefined;
    if (arg === '--config') {
      value = argv[++i];
      if (value === undefined || value.startsWith('-')) throw new UsageError('--config needs a FILE (KEY=value lines; see "plantstore serve --help")');
    } else if (arg.startsWith('--config=')) {
      value = arg.slice('--config='.length);
    } else {
      args.push(arg);
      continue;
    }
    if (value === '') throw new UsageError('--config needs a FILE (KEY=value lines; see "plantstore serve --help")');
    if (file !== undefined) throw new UsageError('--config is given twice; one settings file is read');
    file = value;
  }
  return { args, file };
}
