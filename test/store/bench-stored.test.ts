import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countStored } from '../../bench/lib/durability.js';
import { BENCH_USER } from '../../bench/lib/seed.js';
import { BACKEND, testStore } from '../helpers/app.js';

// The bench's durability check (bench/lib/durability.ts) on a real store of each backend: it counts the
// acknowledged creates the store holds for their owner, whatever else it holds.

const OTHER = 'user-07';
/** Ids as the bench makes them: past 2^32, as its create loads' are. */
const FIRST = 1_000_000_000_000;

async function storeWithPlants(t: Parameters<typeof testStore>[0]) {
  const ts = await testStore(t);
  for (let i = 0; i < 10; i++) assert.equal(await ts.store.plants.createPlant(BENCH_USER, { id: BigInt(FIRST + i), name: `bench ${FIRST + i}` }), 'created');
  for (let i = 10; i < 13; i++) assert.equal(await ts.store.plants.createPlant(OTHER, { id: BigInt(FIRST + i), name: `bench ${FIRST + i}` }), 'created');
  return ts;
}

test(`countStored (${BACKEND}): present ids count, missing ids and another owner's ids do not`, async (t) => {
  const { url } = await storeWithPlants(t);
  const present = [0, 3, 9].map((i) => FIRST + i);
  const missing = [FIRST + 20, FIRST + 21];
  const othersPlants = [FIRST + 10, FIRST + 12];
  assert.equal(await countStored(url, [...present, ...missing, ...othersPlants]), 3);
  assert.equal(await countStored(url, missing), 0);
  assert.equal(await countStored(url, []), 0);
  // The same ids, each looked for under the owner the caller names (as the mix's check does).
  const ownerOf = (id: number) => (id >= FIRST + 10 ? OTHER : BENCH_USER);
  assert.equal(await countStored(url, [...present, ...missing, ...othersPlants], ownerOf), 5);
});

test(`countStored (${BACKEND}): ids looked up in slices give the count of one lookup, whatever falls on a slice's edge`, async (t) => {
  const { url } = await storeWithPlants(t);
  // Every bench user's plant, some missing ids and another owner's, interleaved, in slices of 1 to 4 and one of all.
  const ids = Array.from({ length: 16 }, (_, i) => FIRST + i).reverse();
  for (const chunk of [1, 2, 3, 4, 100]) assert.equal(await countStored(url, ids, undefined, chunk), 10, `slices of ${chunk}`);
});
