// The platform's limit: a bare node:http server answering prepared bytes, with no auth, no store and no
// validation. It still reads each request body before answering, as any real server must.
import http from 'node:http';

const { list, create } = JSON.parse(process.env.BARE_RESPONSES);
const prepare = ({ body, headers }) => {
  const bytes = Buffer.from(body);
  return { bytes, headers: { ...headers, 'content-length': String(bytes.length) } };
};
const listResponse = prepare(list);
const createResponse = prepare(create);

const server = http.createServer((req, res) => {
  const { bytes, headers } = req.method === 'POST' ? createResponse : listResponse;
  req.resume();
  req.on('end', () => {
    res.writeHead(200, headers);
    res.end(bytes);
  });
});
server.keepAliveTimeout = 72_000; // as Fastify's default, so connection reuse is the same
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
