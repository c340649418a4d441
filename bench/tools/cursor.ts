// Cost of sealing and opening one pagination cursor (src/http/routes/plants/cursor.ts): one seal per page with a
// next link, one open per request with a cursor. Prints the median of several rounds.
//   node --import tsx bench/tools/cursor.ts
import { randomBytes } from 'node:crypto';
import { CursorCodec } from '../../src/http/routes/plants/cursor.js';

const codec = new CursorCodec(randomBytes(32));
const scope = { owner: 'alice', tag: 'indoor' };
const N = 100_000;
const rounds = { seal: [] as number[], open: [] as number[] };
for (let round = 0; round < 7; round++) {
  const cursors: string[] = new Array(N);
  let t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) cursors[i] = codec.seal(i + 1, scope);
  rounds.seal.push(Number(process.hrtime.bigint() - t) / N / 1000);
  t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) if (codec.open(cursors[i] as string, scope) !== i + 1) throw new Error('round trip failed');
  rounds.open.push(Number(process.hrtime.bigint() - t) / N / 1000);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
for (const [what, xs] of Object.entries(rounds)) {
  console.log(`${what}: ${median(xs).toFixed(2)} µs per cursor (median of ${xs.length} rounds of ${N}; rounds: ${xs.map((x) => x.toFixed(2)).join(' ')})`);
}
