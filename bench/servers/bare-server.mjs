// The platform's limit: a bare node:http server answering prepared bytes, with no auth, no store and no
// validation. It still reads each request body before answering, as any real server must.
import http from 'node:http';
import { Agent, request } from 'undici';

const { list, create } = JSON.parse(process.env.BARE_RESPONSES);
const prepare = ({ body, headers }) => {
  const bytes = Buffer.from(body);
  return { bytes, headers: { ...headers, 'content-length': String(bytes.length) } };
};
const listResponse = prepare(list);
const createResponse = prepare(create);

// BARE_FORWARD=URL: each create is also POSTed to URL (the bench's webhook receiver) with undici, its
// answer read and dropped, nothing stored, signed or retried: the least a server that delivers one
// webhook per create must do, and so the bound on what any implementation can reach on this machine.
const forward = process.env.BARE_FORWARD;
const agent = forward ? new Agent({ connections: 32 }) : undefined;
const deliver = (body) => {
  request(forward, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent })
    .then((r) => r.body.dump(), () => undefined);
};

const server = http.createServer((req, res) => {
  const post = req.method === 'POST';
  const { bytes, headers } = post ? createResponse : listResponse;
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    res.writeHead(200, headers);
    res.end(bytes);
    if (post && forward) deliver(Buffer.concat(chunks));
  });
});
server.keepAliveTimeout = 72_000; // as Fastify's default, so connection reuse is the same
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
