// The feed scenario's bound: a bare node:http server that keeps every GET /plants/events open as a
// stream of server-sent events (the ready event first, as plantstore's) and answers each POST /plants
// at once with the plant's name; its created event goes to every stream at the end of the event loop's
// turn, with the other creates of that turn in the same write (one write per stream per event, under
// wrk, would measure a fan-out nobody would write). No auth, no store, no log of events, no
// backpressure: what fanning out costs Node itself, and what the bench's subscriber process reads and
// stamps when nothing else is in the way.
import http from 'node:http';

const streams = new Set();
let position = 0;
let pending = '';

function flush() {
  const text = pending;
  pending = '';
  for (const stream of streams) stream.write(text);
}

const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url?.startsWith('/plants/events')) {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.write(`retry: 2000\n\nevent: ready\nid: ${position}\ndata: {}\n\n`);
    streams.add(res);
    res.on('close', () => streams.delete(res));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const id = /"id"\s*:\s*(\d+)/.exec(body)?.[1];
    const name = /"name"\s*:\s*("(?:[^"\\]|\\.)*")/.exec(body)?.[1];
    if (id === undefined || name === undefined) {
      res.writeHead(400, { 'content-type': 'application/json; charset=utf-8' });
      res.end('{"error":"40000","message":"bare feed server: a plant with id and name"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(`{"name":${name}}`);
    if (pending === '') setImmediate(flush);
    pending += `event: plant.created\nid: ${++position}\ndata: {"id":${id},"name":${name}}\n\n`;
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
