// node --import tsx bench/tools/wire-latency.ts --port P --seconds S [--connections 64] CAPTURE.txt
//
// The latency of every request of a wrk run as the wire saw it, to check what wrk's p99 is made of.
// CAPTURE.txt is `tcpdump -r F -n -tt` of a capture taken on loopback during the run, for instance:
//
//   tcpdump -i lo -n -s 128 -w F 'tcp port P and tcp[tcpflags] & tcp-push != 0'
//
// (`tcpdump -r F -n -tt -A`, with each packet's bytes, adds the figures for each request method.)
// (one packet per request and one per answer while answers fit in a segment, as pages of 20 plants do).
// A request is the time its packet left the client; its answer, the first packet back on that connection.
//
// Printed: the raw percentiles; the same without the first request of each connection (which waits
// for the server to accept() it: Node's libuv accepts one connection per event-loop turn, so under load
// the 64th waits 64 turns); and the p99 after wrk's own correction for coordinated omission, which wrk
// applies to every latency it reports (wrk.c, `stats_correct`: each latency L longer than twice the
// run's mean interval I = duration / (requests / connections) adds one more sample at L − I, L − 2I, …,
// down to I). Nothing here is part of `npm test`.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: args, positionals } = parseArgs({
  options: { port: { type: 'string' }, seconds: { type: 'string' }, connections: { type: 'string', default: '64' } },
  allowPositionals: true,
});
const port = Number(args.port);
const seconds = Number(args.seconds);
const connections = Number(args.connections);
const file = positionals[0];
if (!Number.isInteger(port) || !(seconds > 0) || file === undefined) {
  console.error('usage: tools/wire-latency.ts --port P --seconds S [--connections 64] CAPTURE.txt');
  process.exit(2);
}

interface Exchange { sentAt: number; us: number; first: boolean; method: string }
const exchanges: Exchange[] = [];
const waiting = new Map<number, { at: number; method: string }>();
const seen = new Set<number>();
const line = /^(\d+\.\d+) IP [\d.]+\.(\d+) > [\d.]+\.(\d+):/;
const requestLine = /(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \//;
const lines = readFileSync(file, 'latin1').split('\n');
lines.forEach((text, i) => {
  const m = line.exec(text);
  if (m === null) return;
  const at = Number(m[1]);
  const from = Number(m[2]);
  const to = Number(m[3]);
  if (to === port) {
    // With -A, the packet's bytes follow on the next lines (until the next packet's line).
    let method = '?';
    for (let j = i + 1; j < Math.min(lines.length, i + 8) && !line.test(lines[j] ?? ''); j++) {
      const r = requestLine.exec(lines[j] ?? '');
      if (r !== null) {
        method = r[1] as string;
        break;
      }
    }
    waiting.set(from, { at, method });
  } else if (from === port) {
    const sent = waiting.get(to);
    if (sent === undefined) return;
    waiting.delete(to);
    exchanges.push({ sentAt: sent.at, us: Math.round((at - sent.at) * 1e6), first: !seen.has(to), method: sent.method });
    seen.add(to);
  }
});
if (exchanges.length === 0) throw new Error(`no request and answer on port ${port} in ${file}`);

const pct = (sorted: readonly number[], p: number) => (sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0) / 1000;
const ms = (x: number) => x.toFixed(1);
const summary = (name: string, us: number[]) => {
  const sorted = us.slice().sort((a, b) => a - b);
  console.log(`${name}: ${sorted.length} requests, p50 ${ms(pct(sorted, 0.5))} ms, p99 ${ms(pct(sorted, 0.99))} ms, max ${ms((sorted.at(-1) ?? 0) / 1000)} ms`);
};

summary('on the wire', exchanges.map((e) => e.us));
summary('  without each connection\'s first request', exchanges.filter((e) => !e.first).map((e) => e.us));
summary('  each connection\'s first request alone', exchanges.filter((e) => e.first).map((e) => e.us));
const methods = [...new Set(exchanges.map((e) => e.method))].filter((m) => m !== '?');
for (const method of methods) summary(`  ${method}, without first requests`, exchanges.filter((e) => !e.first && e.method === method).map((e) => e.us));

// wrk's correction, as in its stats_correct, on the raw latencies: with and without the connections' first requests.
const interval = Math.floor((seconds * 1e6) / Math.floor(exchanges.length / connections));
const correct = (us: readonly number[]): { p99: number; added: number } => {
  const all = us.slice();
  for (const l of us) if (l >= 2 * interval) for (let m = l - interval; m > interval; m -= interval) all.push(m);
  return { p99: pct(all.sort((a, b) => a - b), 0.99), added: all.length - us.length };
};
const withFirsts = correct(exchanges.map((e) => e.us));
const withoutFirsts = correct(exchanges.filter((e) => !e.first).map((e) => e.us));
console.log(`with wrk's correction (interval ${ms(interval / 1000)} ms): p99 ${ms(withFirsts.p99)} ms (${withFirsts.added} samples added); ` +
  `without each connection's first request, p99 ${ms(withoutFirsts.p99)} ms (${withoutFirsts.added} added)`);
