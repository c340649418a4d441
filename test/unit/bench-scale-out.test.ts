import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  connectionVerdict, DEFAULT_POOL_SIZE, overRounds, parseInstances, parsePoolSize, scaleCells, scaleRows, shortOfCoresFrom, storedLine,
  together, type Measured,
} from '../../bench/lib/scale-out.js';

// The bench's scale-out arithmetic (bench/lib/scale-out.ts): the numbers of instances, N wrk processes
// added up, × one instance and efficiency, the stored check's line, and the max_connections check.

test('--instances: sorted, without repeats, 1 added when missing; anything but positive whole numbers refused', () => {
  assert.deepEqual(parseInstances('1,2,4'), [1, 2, 4]);
  assert.deepEqual(parseInstances('8, 2,4,2'), [1, 2, 4, 8]);
  assert.deepEqual(parseInstances('3'), [1, 3]);
  for (const bad of ['0', '-2', '2.5', 'two', '', '1,,2', '1e3']) {
    assert.throws(() => parseInstances(bad), /^Error: --instances: ".*" is not a positive whole number/, bad);
  }
});

test('the pool size: --pool-size, else the environment\'s DATABASE_POOL_SIZE, else plantstore\'s default, within its bounds', () => {
  assert.equal(DEFAULT_POOL_SIZE, 10);
  assert.equal(parsePoolSize(undefined, undefined), 10);
  assert.equal(parsePoolSize(undefined, '4'), 4);
  assert.equal(parsePoolSize('6', '4'), 6);
  assert.throws(() => parsePoolSize('0', undefined), /^Error: --pool-size: "0" is not a pool size from 1 to 1000$/);
  assert.throws(() => parsePoolSize(undefined, 'many'), /^Error: DATABASE_POOL_SIZE: "many"/);
});

test('N wrk processes at once: requests a second added up, the worst p99, errors added up, CPU per request of all of them', () => {
  const shares = [
    { requests: 30_000, rps: 10_000, p99: 12.5, errors: 0 },
    { requests: 27_000, rps: 9_000, p99: 30.1, errors: 2 },
    { requests: 33_000, rps: 11_000, p99: 8, errors: 1 },
  ];
  assert.deepEqual(together(shares, 4_500_000, 900_000), { rps: 30_000, p99: 30.1, errors: 3, cpuUs: 50, dbCpuUs: 10 });
  assert.equal(together(shares, 0, undefined).dbCpuUs, undefined, 'no DB CPU where PostgreSQL is not visible');
  assert.equal(together([{ requests: 0, rps: 0, p99: 0, errors: 64 }], 1000, undefined).cpuUs, 1000, 'no request answered: no division by zero');
});

test('over rounds: medians of each figure, the errors of every round', () => {
  const rounds = [
    { rps: 100, p99: 9, errors: 1, cpuUs: 40, dbCpuUs: 5 },
    { rps: 300, p99: 7, errors: 0, cpuUs: 60, dbCpuUs: 3 },
    { rps: 200, p99: 20, errors: 2, cpuUs: 50, dbCpuUs: 4 },
  ];
  assert.deepEqual(overRounds(2, 'plantstore', 'create', rounds),
    { instances: 2, system: 'plantstore', kind: 'create', rps: 200, p99: 9, errors: 3, cpuUs: 50, dbCpuUs: 4 });
});

const measured = (instances: number, system: 'bare' | 'plantstore', kind: 'list' | 'create', rps: number): Measured =>
  ({ instances, system, kind, rps, p99: 10, errors: 0, cpuUs: 50, dbCpuUs: system === 'bare' ? undefined : 5 });

test('× one instance divides by the same system and kind at N = 1, efficiency by N too, and plantstore\'s is read against the bare servers\'', () => {
  const rows = scaleRows([
    measured(4, 'plantstore', 'list', 72_000),
    measured(1, 'plantstore', 'create', 10_000),
    measured(1, 'bare', 'list', 40_000),
    measured(4, 'bare', 'list', 144_000),
    measured(1, 'plantstore', 'list', 20_000),
    measured(4, 'plantstore', 'create', 30_000),
  ]);
  assert.deepEqual(rows.map((r) => [r.instances, r.kind, r.system]), [
    [1, 'list', 'bare'], [1, 'list', 'plantstore'], [1, 'create', 'plantstore'],
    [4, 'list', 'bare'], [4, 'list', 'plantstore'], [4, 'create', 'plantstore'],
  ]);
  const at = (n: number, system: string, kind: string) => rows.find((r) => r.instances === n && r.system === system && r.kind === kind)!;
  assert.equal(at(1, 'plantstore', 'list').timesOne, 1);
  assert.equal(at(1, 'plantstore', 'list').efficiency, 1);
  assert.equal(at(4, 'plantstore', 'list').timesOne, 3.6);
  assert.equal(at(4, 'plantstore', 'list').efficiency, 0.9);
  assert.equal(at(4, 'bare', 'list').efficiency, 0.9);
  assert.equal(at(4, 'plantstore', 'list').ofBare, 1, 'as efficient as the platform');
  assert.equal(at(4, 'plantstore', 'create').timesOne, 3);
  assert.equal(at(4, 'plantstore', 'create').efficiency, 0.75);
  assert.equal(at(4, 'plantstore', 'create').ofBare, undefined, 'no bare create measured');
  assert.equal(at(4, 'bare', 'list').ofBare, undefined, 'only plantstore\'s rows are read against bare');
  assert.deepEqual(scaleCells([at(4, 'plantstore', 'list')]), [['4', 'plantstore postgres', 'list', '72,000', '3.60×', '90%', '100%', '10.0', '50', '5', '0']]);
});

test('a system that answered nothing with one instance has no × one or efficiency, rather than infinities', () => {
  const rows = scaleRows([measured(1, 'plantstore', 'create', 0), measured(2, 'plantstore', 'create', 5_000)]);
  assert.deepEqual(rows.map((r) => [r.timesOne, r.efficiency]), [[undefined, undefined], [undefined, undefined]]);
});

test('the stored check says every create is in the store, or how many are, FAILED', () => {
  assert.equal(storedLine(123_456, 123_456), 'scale-out: 123,456 creates answered 200 at every N; every one is in the store');
  assert.equal(storedLine(123_456, 123_455), 'scale-out: 123,456 creates answered 200 at every N; only 123,455 of them are in the store: FAILED');
});

test('max_connections: N × (pool + 1) must fit in what neither the reserved slots nor open connections take, and the line says the numbers', () => {
  const limits = { maxConnections: 100, superuserReserved: 3, reserved: 0, inUse: 2 };
  const fits = connectionVerdict(limits, 8, 10);
  assert.deepEqual([fits.fits, fits.needed, fits.available], [true, 88, 95]);
  assert.equal(fits.line, 'PostgreSQL connections: 8 instances × (DATABASE_POOL_SIZE 10 + 1 listening) = 88 needed; ' +
    '95 available (max_connections 100 − 3 superuser_reserved_connections − 2 in use): fits');
  const withInUse = (inUse: number) => {
    const v = connectionVerdict({ ...limits, inUse }, 8, 10);
    return [v.fits, v.available];
  };
  assert.deepEqual(withInUse(9), [true, 88], 'just enough');
  assert.deepEqual(withInUse(10), [false, 87], 'one short');

  const tooMany = connectionVerdict({ ...limits, reserved: 5 }, 12, 10);
  assert.deepEqual([tooMany.fits, tooMany.needed, tooMany.available], [false, 132, 90]);
  assert.equal(tooMany.line, 'PostgreSQL connections: 12 instances × (DATABASE_POOL_SIZE 10 + 1 listening) = 132 needed; ' +
    '90 available (max_connections 100 − 3 superuser_reserved_connections − 5 reserved_connections − 2 in use): does NOT fit. ' +
    'Raise max_connections to 142 or more (ALTER SYSTEM SET max_connections = 142; then restart PostgreSQL), or give the instances smaller pools (--pool-size 6).');
  // The suggested pool fits.
  assert.equal(connectionVerdict({ ...limits, reserved: 5 }, 12, 6).fits, true);
  // The suggested max_connections fits.
  assert.equal(connectionVerdict({ ...limits, reserved: 5, maxConnections: 142 }, 12, 10).fits, true);

  const noPoolFits = connectionVerdict({ maxConnections: 20, superuserReserved: 3, reserved: 0, inUse: 1 }, 12, 10);
  assert.match(noPoolFits.line, /or run fewer instances \(--instances up to 1\)\.$/);
  // Not even one instance with a pool of one: no --instances or --pool-size can help, and none is suggested.
  const nothingFits = connectionVerdict({ maxConnections: 5, superuserReserved: 3, reserved: 0, inUse: 1 }, 1, 10);
  assert.equal(nothingFits.fits, false);
  assert.match(nothingFits.line, /then restart PostgreSQL\)\.$/);
});

test('the machine is short of cores once N instances and N wrk processes want more than it has', () => {
  assert.equal(shortOfCoresFrom(2), 2);
  assert.equal(shortOfCoresFrom(16), 9);
  assert.equal(shortOfCoresFrom(1), 1);
});
