import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from '../../src/store/sqlite/driver.js';
import { BACKEND } from '../helpers/app.js';
import { ROOT } from '../helpers/checkout.js';
import { outputOf } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

// npm test runs the tests compiled, so its worker threads start as dist/'s do (entry.cjs). A file run
// alone, and bench/, run the sources under tsx, where a thread starts from from-sources.cjs instead
// (src/store/sqlite/workers/start.ts): this runs that path, in a process of its own under tsx.
test('from the TypeScript sources under tsx, a worker thread starts and answers (the quick check of a store)', async (t) => {
  const path = join(tempDir(t), 'sources.db');
  new Database(path).close();
  const script = `import { quickCheck } from './src/store/sqlite/file.ts';
await quickCheck(${JSON.stringify(path)}, ${JSON.stringify(path)});
console.log('checked');`;
  const res = await outputOf(spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT }));
  assert.deepEqual([res.code, res.stdout, res.stderr], [0, 'checked\n', '']);
});
