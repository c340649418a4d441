// A node:test reporter for scripts/test.mjs: a count of passed tests now and then and a line for each
// failure as it happens, so that two runs going at once can share a terminal. Each run's full spec
// report goes to a file and is printed when the run ends.
const label = process.env.PLANTSTORE_TEST_RUN_LABEL ?? '';
const EVERY = 50;

export default async function* progress(source) {
  let passed = 0;
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0) continue;
    if (event.type === 'test:fail') {
      yield `${label} FAIL ${event.data.name} (${event.data.file ?? 'unknown file'})\n`;
    } else if (++passed % EVERY === 0) {
      yield `${label} ${passed} tests passed\n`;
    }
  }
}
