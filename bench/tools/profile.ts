// Reads a V8 CPU profile (from `npm run bench -- --profile DIR`, or `node --cpu-prof`) and prints where
// the time went: self time by function and by package or source file, as shares of the busy time
// (idle left out).  node --import tsx bench/tools/profile.ts FILE.cpuprofile [TOP]
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}
interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (file === undefined) throw new Error('usage: node --import tsx bench/tools/profile.ts FILE.cpuprofile [TOP]');
const top = Number(topArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const root = fileURLToPath(new URL('../..', import.meta.url));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

/** Where a frame's code lives: a package under node_modules, a file of ours, node's internals, or V8's pseudo-frames. */
function place(url: string): string {
  if (url === '') return '(V8/native)';
  if (url.startsWith('node:')) return 'node:internals';
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1] as string;
  return relative(root, path);
}

const selfByFunction = new Map<string, number>();
const selfByPlace = new Map<string, number>();
let total = 0;
let idle = 0;
profile.samples.forEach((id, i) => {
  // The delta before the next sample is the time this sample stands for.
  const us = profile.timeDeltas[i + 1] ?? 0;
  const node = byId.get(id);
  if (node === undefined) return;
  total += us;
  const { functionName, url, lineNumber } = node.callFrame;
  if (functionName === '(idle)') {
    idle += us;
    return;
  }
  const where = place(url);
  const key = `${functionName || '(anonymous)'}  ${where}${url ? `:${lineNumber + 1}` : ''}`;
  selfByFunction.set(key, (selfByFunction.get(key) ?? 0) + us);
  selfByPlace.set(where, (selfByPlace.get(where) ?? 0) + us);
});
const busy = total - idle;
const print = (title: string, m: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * us) / busy).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
  }
};
console.log(`${file}: ${(total / 1e6).toFixed(1)} s profiled, ${(busy / 1e6).toFixed(1)} s busy (${((100 * busy) / total).toFixed(0)}%); shares of the busy time`);
print('self time by package or file', selfByPlace);
print(`self time by function (top ${top})`, selfByFunction);
