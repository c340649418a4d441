import { sourceName, type Settings } from '../config/load.js';
import { allowedValues, OPTIONS, shownValue, type OptionInfo } from '../config/options.js';
import { oneLine } from '../domain/shown.js';

// `serve --help`, made from the option table rather than written. The main help's list of commands is
// made from the command table (cli/commands.ts); each command group's own help is a text in its file,
// beside the options it describes.

/** Width of `serve --help`: the terminal's when it is narrower, so that nothing wraps mid-column. */
const HELP_WIDTH = 100;

/** The width `serve --help` is written in on `stdout`: a terminal's own when narrower. */
export function helpWidth(stdout: { readonly isTTY?: boolean; readonly columns?: number }): number {
  return Math.min(HELP_WIDTH, stdout.isTTY === true ? (stdout.columns ?? HELP_WIDTH) : HELP_WIDTH);
}

/** Breaks `text` into lines of at most `width` characters, at spaces (a longer word keeps its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return [...lines, line];
}

/**
 * Two aligned columns: the flag with its value's kind, then what it does, its environment variable, its
 * default and what it accepts, wrapped within the description column. With `settings` (what the flags,
 * the environment and the settings file give now), each setting not at its default also says its value
 * and where it came from; a string is why they are refused.
 */
export function serveHelp(settings?: Settings | string, width = HELP_WIDTH): string {
  const metavar = (o: OptionInfo) => (o.values?.kind === 'integer' ? 'N' : o.values?.kind === 'duration' ? 'DURATION' : 'VALUE');
  const flags = OPTIONS.map((o: OptionInfo) => `--${o.flag} ${metavar(o)}`);
  const column = Math.max(...flags.map((f) => f.length)) + 4; // two spaces of indent, two between columns
  const textWidth = Math.max(30, width - column);
  const now = (o: OptionInfo): string[] => {
    if (typeof settings !== 'object') return [];
    const source = settings.sources[o.env];
    const value = settings.given[o.env];
    if (source === undefined || source.kind === 'default' || value === undefined) return [];
    return wrap(`now: ${value === '' ? '(empty)' : shownValue(o, value, settings.cwd)} (from ${oneLine(sourceName(source))})`, textWidth);
  };
  const rows = OPTIONS.map((o: OptionInfo, i) => {
    const text = [
      ...wrap(o.help, textWidth),
      ...wrap([`env ${o.env}`, `default ${o.default === '' ? '(empty)' : o.default}`, allowedValues(o)].filter(Boolean).join(', '), textWidth),
      ...now(o),
    ];
    return text.map((line, j) => `${j === 0 ? `  ${flags[i]}`.padEnd(column) : ''.padEnd(column)}${line}`).join('\n');
  });
  const file = typeof settings === 'object' && settings.file !== null ? `\nSettings file: ${oneLine(settings.file)}.` : '';
  const refused = typeof settings === 'string' ? `\n\nThe settings as given now are refused: ${settings}` : '';
  return `Usage: plantstore serve [options]

Each option can also be set by the environment variable named under it (env), or by a line VAR=value in
a settings file (--config FILE, or PLANTSTORE_CONFIG=FILE). A flag wins over the environment, which wins
over the file. N is a whole number; DURATION is 0, or a whole number and s, m, h or d. A setting given a value
says it, and where from, under "now".${file}

${rows.join('\n')}${refused}`;
}
