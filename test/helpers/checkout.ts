import { realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout's folder. `npm test` runs compiled copies of the tests from a folder of its own whose
 * other files are links to the checkout's (scripts/test.mjs), so a path relative to a test file reaches
 * the checkout's files but is not in the checkout: the real path of package.json is, either way.
 */
export const ROOT = dirname(realpathSync(fileURLToPath(new URL('../../package.json', import.meta.url))));
