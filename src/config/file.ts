import { readFileSync } from 'node:fs';
import { nearestName } from '../domain/nearest.js';
import { ConfigError } from './error.js';

// The settings file (`--config FILE`, PLANTSTORE_CONFIG): KEY=value lines, as .env files are written.
//
// Not Node's own reader (process.loadEnvFile, util.parseEnv): neither says on which line a value was,
// nor refuses a key that is no setting (a typo would pass unnoticed, the setting left at its default),
// and loadEnvFile puts every line into process.env, where the source of a value is lost and any child
// process inherits the secrets. The format is theirs: `#` comments, blank lines, `export ` before a key,
// values in single, double or back quotes (\n in double quotes a line break), an unquoted value ending
// at ` #`.

/** A value read from the file, with the line it is on (from 1). */
export interface FileSetting {
  readonly value: string;
  readonly line: number;
}

export interface SettingsFile {
  /** The file as it was named (`--config`, PLANTSTORE_CONFIG), for messages. */
  readonly name: string;
  /** By variable name (PORT, DATABASE_URL). */
  readonly settings: ReadonlyMap<string, FileSetting>;
}

const LINE = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/;

/** The value of one line, after `KEY=`: unquoted (up to a ` #` comment), or quoted. */
function valueOf(text: string, where: string): string {
  const quote = text[0];
  if (quote !== '"' && quote !== "'" && quote !== '`') return text.replace(/(^|\s)#.*$/, '').trim();
  const end = text.indexOf(quote, 1);
  // A value is never repeated in a message: it may be a password.
  if (end < 0) throw new ConfigError(`${where}: the value's closing ${quote} is missing (a quoted value must end on its line)`);
  const rest = text.slice(end + 1).trim();
  if (rest !== '' && !rest.startsWith('#')) throw new ConfigError(`${where}: only a # comment may follow the value's closing ${quote}`);
  const inner = text.slice(1, end);
  return quote === '"' ? inner.replaceAll('\\n', '\n') : inner;
}

/** Reads settings file text; `known` are the variables it may set. Refusals name the file and line. */
export function parseSettings(text: string, name: string, known: readonly string[]): SettingsFile {
  const settings = new Map<string, FileSetting>();
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const where = `${name}:${i + 1}`;
    const m = LINE.exec(line);
    if (m === null) throw new ConfigError(`${where}: expected KEY=value (a setting's name, =, its value), or a # comment`);
    const key = m[1] as string;
    if (!known.includes(key)) {
      const guess = nearestName(key, known);
      throw new ConfigError(`${where}: unknown setting ${key}${guess ? ` (did you mean ${guess}?)` : ''}; the settings are listed by "plantstore serve --help"`);
    }
    const earlier = settings.get(key);
    if (earlier !== undefined) throw new ConfigError(`${where}: ${key} is set already, on line ${earlier.line}`);
    settings.set(key, { value: valueOf(m[2] as string, where), line: i + 1 });
  });
  return { name, settings };
}

/** Reads and parses the settings file at `path`. */
export function readSettingsFile(path: string, known: readonly string[]): SettingsFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    throw new ConfigError(`cannot read the settings file ${path}: ${why}`);
  }
  return parseSettings(text, path, known);
}
