// A webhook receiver for the bench: answers every POST 200 at once (after reading its body) and counts
// the deliveries, all and by distinct webhook-id; GET /stats returns the counts as JSON.
import http from 'node:http';

let received = 0;
const ids = new Set();
const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ received, unique: ids.size }));
    return;
  }
  req.resume();
  req.on('end', () => {
    received++;
    ids.add(req.headers['webhook-id']);
    res.writeHead(200, { 'content-length': '0' });
    res.end();
  });
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
