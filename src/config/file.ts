import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
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

/** The variable that names the settings file; `--config FILE` sets it for the CLI's own process. */
export const CONFIG_FILE_VARIABLE = 'PLANTSTORE_CONFIG';

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

/**
 * The largest settings file read. One line per setting, with a comment each, is a few kilobytes; the
 * bound leaves room for long comments and certificates in quoted values, and keeps a file that is no
 * settings file (a log, a disk image named by mistake) from being read whole.
 */
export const SETTINGS_FILE_MAX_BYTES = 64 * 1024;

/** Why the settings file cannot be opened, from the error's code. */
function openRefusal(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
}

/**
 * The file's text, read through one descriptor: a regular file of at most SETTINGS_FILE_MAX_BYTES only.
 * A device (/dev/zero never ends) or a FIFO (which blocks until a writer comes) is refused by the fstat
 * of the opened descriptor, so that nothing can be swapped in between a check and the read; O_NONBLOCK
 * makes opening a FIFO return at once instead of waiting for a writer. The read stops one byte past the
 * bound, in case the file grew since the fstat.
 */
function readBounded(path: string, cwd: string): string {
  let fd: number;
  try {
    fd = openSync(resolve(cwd, path), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    throw new ConfigError(`cannot read the settings file ${path}: ${openRefusal(error)}`);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw new ConfigError(`cannot read the settings file ${path}: it is a directory`);
    if (!stat.isFile()) throw new ConfigError(`cannot read the settings file ${path}: it is not a regular file (a device, a FIFO or a socket)`);
    const tooLarge = () => new ConfigError(`cannot read the settings file ${path}: it is larger than ${SETTINGS_FILE_MAX_BYTES / 1024} KiB, too large for a settings file`);
    if (stat.size > SETTINGS_FILE_MAX_BYTES) throw tooLarge();
    const buffer = Buffer.alloc(SETTINGS_FILE_MAX_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > SETTINGS_FILE_MAX_BYTES) throw tooLarge();
    return buffer.toString('utf8', 0, length);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(`cannot read the settings file ${path}: ${openRefusal(error)}`);
  } finally {
    closeSync(fd);
  }
}

/** Reads and parses the settings file at `path`, relative to `cwd` unless absolute; messages name it as given. */
export function readSettingsFile(path: string, known: readonly string[], cwd: string): SettingsFile {
  return parseSettings(readBounded(path, cwd), path, known);
}
