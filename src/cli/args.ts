import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A mistake in how the command was called: message on stderr, exit code 2. */
export class UsageError extends Error {}

/** A mistake in the options themselves (unknown, or missing its value): the command's --help says what it takes. */
export class OptionError extends UsageError {
  /** The message with where to look: `plantstore token create --help`. */
  withHelp(command: string): string {
    return `${this.message}; see "plantstore ${command} --help"`;
  }
}

/** Edits (insertions, deletions, substitutions, swaps of neighbours) from `a` to `b`. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const above = d[i - 1] as number[];
      row[j] = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j] as number, ((d[i - 2] as number[])[j - 2] as number) + 1);
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/** The option meant by a mistyped one (`--prot`): the nearest by a few edits, or the one it begins (`--us`). */
export function nearestOption(name: string, options: readonly string[]): string | undefined {
  const ranked = options
    .map((option) => ({ option, edits: option.startsWith(name) && name.length >= 4 ? 0 : distance(name, option) }))
    .filter(({ option, edits }) => edits <= Math.max(1, Math.floor(Math.min(option.length, name.length) / 3)))
    .sort((x, y) => x.edits - y.edits);
  return ranked[0]?.option;
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
      const guess = token.rawName.startsWith('--') ? nearestOption(token.rawName, known) : undefined;
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
