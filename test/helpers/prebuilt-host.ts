import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ROOT } from './checkout.js';

/**
 * A stand-in for the host better-sqlite3's install script downloads its prebuilt addon from (GitHub's
 * releases, which this machine cannot reach). prebuild-install asks a mirror named by
 * `npm_config_better_sqlite3_binary_host` for `/v{version}/better-sqlite3-v{version}-node-v{abi}-{platform}-{arch}.tar.gz`;
 * this serves, for the checkout's exact better-sqlite3 version and this Node.js's ABI only, the addon the
 * checkout's own install built. Any other request is answered 404, and the install script then compiles
 * from source, as it does for a user whose download fails: slower, never wrong.
 *
 * Installing this way runs the same install script a user's `npm install` runs, and downloads over real
 * HTTP, but takes seconds instead of a compile of SQLite that takes minutes on a loaded machine.
 */
export interface PrebuiltHost {
  /** The environment that points better-sqlite3's install script at this host. */
  readonly env: Record<string, string>;
  /** The paths asked for, in order. */
  readonly requests: string[];
  /** The path that serves the addon. */
  readonly served: string;
  close(): Promise<void>;
}

export async function prebuiltHost(): Promise<PrebuiltHost> {
  const driver = join(ROOT, 'node_modules/better-sqlite3');
  const { version } = JSON.parse(readFileSync(join(driver, 'package.json'), 'utf8')) as { version: string };
  const served = `/v${version}/better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const folder = mkdtempSync(join(tmpdir(), 'plantstore-prebuilt-'));
  const tarball = join(folder, basename(served));
  // The layout prebuild-install unpacks into the package's folder.
  execFileSync('tar', ['-czf', tarball, '-C', driver, 'build/Release/better_sqlite3.node']);
  const body = readFileSync(tarball);
  const requests: string[] = [];
  const server = createServer((request, response) => {
    requests.push(request.url ?? '');
    if (request.method === 'GET' && request.url === served) {
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
      response.end(body);
    } else {
      response.writeHead(404).end();
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const host = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // prebuild-install keeps each download in npm's cache under a name made from its URL; the port makes
  // that name new at every run, so the copy is removed rather than left to pile up.
  const url = `${host}${served}`;
  const cache = join(process.env.npm_config_cache || join(homedir(), '.npm'), '_prebuilds');
  const cached = join(cache, `${createHash('sha512').update(url).digest('hex').slice(0, 6)}-${basename(url).replace(/[^a-zA-Z0-9.]+/g, '-')}`);
  return {
    env: { npm_config_better_sqlite3_binary_host: host },
    requests,
    served,
    async close() {
      server.close();
      server.closeAllConnections();
      rmSync(folder, { recursive: true, force: true });
      rmSync(cached, { force: true });
    },
  };
}
