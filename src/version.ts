import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** plantstore's version, from package.json (one directory above src/ and dist/ alike), read once. */
export function packageVersion(): string {
  cached ??= (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  return cached;
}
