import { oneLine } from '../domain/shown.js';

/**
 * A setting refused: its message names the setting and, unless it may hold a secret, the value given,
 * with control characters escaped, so that a value holding a line break cannot add a line of its own to
 * what shows the refusal (stderr, a log line, doctor, `serve --help`).
 */
export class ConfigError extends Error {
  constructor(message: string) {
    super(oneLine(message));
  }
}

/**
 * The refusal with each setting named the way it was given: `--port` for a flag (the user typed that),
 * PORT for the environment. Quoted text is the value given, and is left as it is.
 */
export function asTyped(error: ConfigError, fromFlags: ReadonlyArray<{ readonly env: string; readonly flag: string }>): ConfigError {
  const rename = (text: string) => fromFlags.reduce((t, o) => t.replace(new RegExp(`\\b${o.env}\\b`, 'g'), `--${o.flag}`), text);
  return new ConfigError(error.message.split(/("(?:[^"\\]|\\.)*")/).map((part, i) => (i % 2 === 1 ? part : rename(part))).join(''));
}
