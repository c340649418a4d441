import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/checkout.js';
import { run, scratch } from '../helpers/packages.js';

/**
 * `npm run build`, `npm start` and `npm test` all build first, so two builds at once in one checkout
 * happen (two terminals, an editor beside a test run). scripts/build.mjs runs here on a checkout of its
 * own with the project's settings and a source file each for the server and the client: the same steps
 * as on the whole sources, in a second instead of a minute, so that the two builds reach the step that
 * replaces dist/ together; and the dist/ that other tests of the same run import is not touched.
 */

function smallCheckout(dir: string): string {
  for (const file of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs', 'src/store/migrations', 'packages/client/package.json', 'packages/client/tsconfig.json']) {
    cpSync(join(ROOT, file), join(dir, file), { recursive: true });
  }
  writeFileSync(join(dir, 'src/index.ts'), 'export const served = true;\n');
  mkdirSync(join(dir, 'packages/client/src'));
  writeFileSync(join(dir, 'packages/client/src/index.ts'), 'export const client = true;\n');
  mkdirSync(join(dir, 'node_modules'));
  for (const name of ['typescript', '@types']) symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
  return dir;
}

test('two builds at once in one checkout both succeed and leave one complete dist/, with nothing of either build beside it', async (t) => {
  const dir = smallCheckout(scratch(t, 'build'));
  const build = () => run(process.execPath, ['scripts/build.mjs'], dir);
  // The two builds' last steps overlap most times, not every time: a few rounds.
  for (let round = 1; round <= 3; round++) {
    // An earlier build's output, unlike this one's, so each build has something to replace; of many
    // files, as a real one is, so that removing it takes a while.
    for (const out of ['dist', 'packages/client/dist']) {
      mkdirSync(join(dir, out, `stale-${round}`), { recursive: true });
      for (let i = 0; i < 3000; i++) writeFileSync(join(dir, out, `stale-${round}`, `${i}.js`), '');
    }
    const builds = await Promise.all([build(), build()]);
    for (const [i, b] of builds.entries()) assert.equal(b.code, 0, `round ${round}, build ${i + 1} failed:\n${b.stdout}\n${b.stderr}`);
    for (const file of ['dist/index.js', 'dist/store/migrations/sqlite', 'packages/client/dist/index.js']) assert.ok(existsSync(join(dir, file)), `${file} is built`);
    for (const out of ['dist', 'packages/client/dist']) assert.deepEqual(readdirSync(join(dir, out)).filter((f) => f.startsWith('stale')), [], `${out} is this build's`);
    assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith('dist')), ['dist']);
    assert.deepEqual(readdirSync(join(dir, 'packages/client')).filter((f) => f.startsWith('dist')), ['dist']);
  }
});
