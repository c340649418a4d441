import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clock, progressLine, startProgress } from '../../src/cli/progress.js';

test('the progress line: count of the total, rate, elapsed, and an estimate of the time left', () => {
  assert.equal(progressLine('importing', 'records', 45_000, 100_000, 2500), 'importing: 45,000 of 100,000 records (45%), 18,000/s, 0:03 elapsed, about 0:03 left');
  assert.equal(progressLine('exporting', 'records', 1200, undefined, 1000), 'exporting: 1,200 records, 1,200/s, 0:01 elapsed');
  assert.equal(progressLine('exporting', 'records', 0, 0, 0), 'exporting: 0 of 0 records (100%), 0/s, 0:00 elapsed');
  assert.equal(progressLine('backing up', 'pages', 0, 10, 61_000, 'checking the copy'), 'backing up: checking the copy, 1:01 elapsed');
  assert.deepEqual([clock(0), clock(59_499), clock(600_000), clock(3_723_000)], ['0:00', '0:59', '10:00', '1:02:03']);
});

/** A terminal stand-in that records what is written to it, with a clock the test moves. */
function terminal(isTTY: boolean) {
  const writes: string[] = [];
  const stream = { isTTY, columns: 60, write: (text: string) => writes.push(text) } as unknown as NodeJS.WriteStream;
  return { stream, writes };
}

test('on a terminal the line is redrawn at most every 250 ms and cut to its width; notices and the summary come after a clear', () => {
  const { stream, writes } = terminal(true);
  let now = 0;
  const progress = startProgress({ label: 'importing', unit: 'records', quiet: false, stream, now: () => now });
  progress.total(1000);
  now = 100;
  progress.add(10);
  assert.equal(writes.length, 2, 'drawn at the start and when the total is known, not 100 ms later');
  now = 400;
  progress.add(10);
  assert.equal(writes.length, 3);
  const line = /^\r([^\x1b]*)\x1b\[K$/.exec(writes[2] ?? '')?.[1] ?? '';
  assert.ok(line.startsWith('importing: 20 of 1,000 records (2%), 50/s, 0:00 elapsed, '), line);
  assert.equal(line.length, 59, 'cut to the terminal\'s width, less one column');
  progress.log('skipped a conflict');
  assert.deepEqual(writes.slice(3, 5), ['\r\x1b[K', 'skipped a conflict\n']);
  progress.done(['imported']);
  assert.deepEqual(writes.slice(-2), ['\r\x1b[K', 'imported\n']);
});

test('elsewhere only the summary; --quiet not even that', () => {
  const plain = terminal(false);
  const progress = startProgress({ label: 'exporting', unit: 'records', quiet: false, stream: plain.stream });
  progress.total(5);
  progress.add(5);
  progress.log('notice');
  progress.done(['exported 5']);
  assert.deepEqual(plain.writes, ['notice\n', 'exported 5\n']);

  const quiet = terminal(true);
  const silent = startProgress({ label: 'exporting', unit: 'records', quiet: true, stream: quiet.stream });
  silent.total(5);
  silent.log('notice');
  silent.done(['exported 5']);
  assert.deepEqual(quiet.writes, []);
});
