import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DURATION, durationPattern, parseDuration, wholeNumbersUpTo } from '../../src/domain/duration.js';

test('a duration is 0, or a whole number 0–999999 without leading zeros and s, m, h or d; a zero with any unit is zero', () => {
  for (const [text, ms] of [
    ['0', 0], ['0s', 0], ['0m', 0], ['0h', 0], ['0d', 0], ['1s', 1000], ['90s', 90_000], ['15m', 900_000], ['12h', 43_200_000],
    ['30d', 2_592_000_000], ['999999s', 999_999_000], ['999999d', 999_999 * 86_400_000],
  ] as const) {
    assert.equal(parseDuration(text), ms, text);
    assert.ok(DURATION.test(text), text);
  }
  for (const text of ['', '00', '00s', '01s', '1000000s', '1', '5', 's', '1w', '1ms', '-1s', '+1s', '1.5h', ' 1s', '1s ', '1S', '1s1m']) {
    assert.equal(parseDuration(text), null, JSON.stringify(text));
    assert.ok(!DURATION.test(text), JSON.stringify(text));
  }
});

test('wholeNumbersUpTo(max) matches exactly the numbers 0 to max, written without leading zeros', () => {
  for (let max = 0; max <= 1200; max++) {
    const re = new RegExp(`^(?:${wholeNumbersUpTo(max)})$`);
    for (let n = 0; n <= 1300; n++) assert.equal(re.test(String(n)), n <= max, `max ${max}, ${n}`);
    assert.ok(!re.test('00') && !re.test('01') && !re.test(''), `max ${max}`);
  }
  for (const max of [10_080, 604_800, 999_999]) {
    const re = new RegExp(`^(?:${wholeNumbersUpTo(max)})$`);
    for (const n of [0, 9, 10, max - 1, max, max + 1, 10 * max]) assert.equal(re.test(String(n)), n <= max, `max ${max}, ${n}`);
  }
  assert.throws(() => wholeNumbersUpTo(-1));
  assert.throws(() => wholeNumbersUpTo(1.5));
});

test('durationPattern(max) takes a duration exactly when it parses to at most max, in every unit', () => {
  const week = 7 * 86_400_000;
  const re = new RegExp(durationPattern(week));
  for (const unit of ['s', 'm', 'h', 'd']) {
    for (let n = 0; n <= 700_000; n += n < 200 ? 1 : 997) {
      const text = `${n}${unit}`;
      const ms = parseDuration(text);
      assert.equal(re.test(text), ms !== null && ms <= week, text);
    }
  }
  for (const text of ['604800s', '10080m', '168h', '7d', '0']) assert.ok(re.test(text), text);
  for (const text of ['604801s', '10081m', '169h', '8d', '00']) assert.ok(!re.test(text), text);
  assert.equal(durationPattern(), DURATION.source);
});
