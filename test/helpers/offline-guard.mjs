// Preloaded (NODE_OPTIONS=--import) into the OpenAPI linters by test/contract/openapi-lint.test.ts, so that the
// test proves they run offline: any network connection they open (a telemetry post, an update check, a
// remote $ref) is written to stderr as "NETWORK ACCESS: …" and refused. Local (Unix socket) connections
// are left alone. Plain JavaScript: it runs in the linters' Node, without tsx.
import dns from 'node:dns';
import { writeSync } from 'node:fs';
import net from 'node:net';

const refuse = (what) => {
  writeSync(2, `NETWORK ACCESS: ${what}\n`);
  return new Error(`network access refused by test/helpers/offline-guard.mjs: ${what}`);
};

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function guardedConnect(...args) {
  // net.connect() passes [options, callback] as one array; socket.connect() takes (options | port | path, …).
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  const options = typeof first === 'object' && first !== null ? first : typeof first === 'string' ? { path: first } : { port: first, host: args[1] };
  if (typeof options.path === 'string') return connect.apply(this, args);
  throw refuse(`${options.host ?? 'localhost'}:${options.port}`);
};

dns.lookup = function guardedLookup(hostname, ...rest) {
  const error = refuse(`DNS lookup of ${hostname}`);
  const callback = rest.at(-1);
  if (typeof callback !== 'function') throw error;
  process.nextTick(() => callback(error));
};
dns.promises.lookup = async (hostname) => {
  throw refuse(`DNS lookup of ${hostname}`);
};
