import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { Logger } from 'pino';
import { test } from 'node:test';
import { requestLogger } from '../../src/http/plugins/request-logger.js';
import { createLogger } from '../../src/logger.js';

/** A real pino logger into memory, seen through a proxy that counts the children made of it. */
function counted(level: string): { parent: Logger; made: () => number; lines: () => Record<string, unknown>[] } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d) => (text += d));
  const logger = createLogger(level, out);
  let made = 0;
  const parent = new Proxy(logger, {
    get(target, property, receiver) {
      if (property !== 'child') return Reflect.get(target, property, receiver);
      return (...args: Parameters<Logger['child']>) => {
        made++;
        return target.child(...args);
      };
    },
  });
  return { parent, made: () => made, lines: () => text.split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

test('a request logger makes its pino child only when something is logged, then once; every line has the request id', async () => {
  const { parent, made, lines } = counted('debug');
  const log = requestLogger(parent, { reqId: 'r-1' }, {});
  assert.equal(made(), 0, 'nothing logged, no child');
  log.info({ status: 200 }, 'answered');
  log.warn('plain');
  log.debug('n=%d', 5);
  log.child({ part: 'inner' }).error('from a child');
  assert.equal(made(), 1);
  assert.equal(log.level, 'debug');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(
    lines().map(({ level, msg, reqId, status, part }) => ({ level, msg, reqId, status, part })),
    [
      { level: 30, msg: 'answered', reqId: 'r-1', status: 200, part: undefined },
      { level: 40, msg: 'plain', reqId: 'r-1', status: undefined, part: undefined },
      { level: 20, msg: 'n=5', reqId: 'r-1', status: undefined, part: undefined },
      { level: 50, msg: 'from a child', reqId: 'r-1', status: undefined, part: 'inner' },
    ],
  );
});

test("a request logger keeps its parent's level: a line under it is not written", async () => {
  const { parent, lines } = counted('info');
  const log = requestLogger(parent, { reqId: 'r-2' }, {});
  log.debug('hidden');
  log.trace('hidden too');
  log.info('shown');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(lines().map((l) => l.msg), ['shown']);
});
