// The realistic mix: what a cache cannot hide. 1,000 users, each with a token of its own and 20 to 200
// plants (150,000 in all, created interleaved as real traffic would create them), some tagged. Each
// request of the load picks a user at random: a create (CREATE_SHARE of them), or a list of that user's
// plants, the first page or one further on through a cursor the server sealed, some with a tag filter.
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { createLogger } from '../../src/logger.js';
import { openStore } from '../../src/store/open.js';
import Database from '../../src/store/sqlite/driver.js';
import { issueToken } from '../../test/helpers/tokens.js';
import { doneFunction } from './wrk.js';
import { freshSchema } from './seed.js';

export const MIX_USERS = 1000;
export const MIX_PLANTS = 150_000;
const MIN_PLANTS = 20;
const MAX_PLANTS = 200;
export const PAGE = 20;
/** Tags of the seeded plants, with their shares (the rest untagged): a tag filter returns real pages. */
const TAGS: ReadonlyArray<readonly [string, number]> = [['indoor', 0.3], ['outdoor', 0.2], ['herb', 0.1]];
/** Shares of the load: creates among requests; among lists, tag filters and first pages. */
export const CREATE_SHARE = 0.1;
export const TAG_SHARE = 0.2;
export const FIRST_PAGE_SHARE = 0.5;
/**
 * Create ids are FIRST_ID + 1000 × k + user: the owner is read back from the id for the durability check.
 * Far above the seeded ids and the other scenarios' (1e12 + …), below 2^53.
 */
export const MIX_FIRST_ID = 5_000_000_000_000;
export const MIX_IDS_PER_LOAD = 1000 * 100_000_000;

export const mixUser = (i: number) => `mix-${String(i).padStart(4, '0')}`;
export const mixOwnerOf = (id: number) => mixUser(id % MIX_USERS);

/** mulberry32: a small seeded PRNG, so every run seeds the very same stores. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface MixPlant {
  readonly owner: string;
  readonly id: number;
  readonly name: string;
  readonly tag: string | null;
}

/**
 * Sizes from MIN_PLANTS to MAX_PLANTS, skewed towards the large (200 - 180·u^2.6 has mean ≈ 150), then
 * nudged one plant at a time to make the total exactly MIX_PLANTS; plants in a shuffled creation order.
 */
export function mixPlants(): MixPlant[] {
  const random = prng(14);
  const sizes = Array.from({ length: MIX_USERS }, () => Math.round(MAX_PLANTS - (MAX_PLANTS - MIN_PLANTS) * random() ** 2.6));
  let total = sizes.reduce((a, b) => a + b, 0);
  while (total !== MIX_PLANTS) {
    const i = Math.floor(random() * MIX_USERS);
    const step = total < MIX_PLANTS ? 1 : -1;
    const size = (sizes[i] as number) + step;
    if (size < MIN_PLANTS || size > MAX_PLANTS) continue;
    sizes[i] = size;
    total += step;
  }
  const owners: number[] = [];
  sizes.forEach((n, user) => {
    for (let k = 0; k < n; k++) owners.push(user);
  });
  for (let i = owners.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [owners[i], owners[j]] = [owners[j] as number, owners[i] as number];
  }
  return owners.map((user, i) => {
    let r = random();
    let tag: string | null = null;
    for (const [name, share] of TAGS) {
      if (r < share) {
        tag = name;
        break;
      }
      r -= share;
    }
    return { owner: mixUser(user), id: i + 1, name: `plant ${i + 1}`, tag };
  });
}

/** The store's migrations, one token per user, and the cursor key made now, so that copies of a SQLite store share it. */
async function prepareMixStore(databaseUrl: string): Promise<string[]> {
  const store = await openStore(parseDatabaseUrl(databaseUrl, process.cwd()), { logger: createLogger('silent'), poolSize: 1, startupTimeoutMs: 5000 });
  try {
    await store.secrets.cursorKey();
    const tokens: string[] = [];
    for (let i = 0; i < MIX_USERS; i++) tokens.push((await issueToken(store, { user: mixUser(i), name: 'bench' })).secret);
    return tokens;
  } finally {
    await store.close();
  }
}

export async function seedMixSqlite(path: string): Promise<string[]> {
  const tokens = await prepareMixStore(`sqlite:${path}`);
  const db = new Database(path);
  db.pragma('synchronous = OFF'); // seeding only; the server reopens with FULL
  const insert = db.prepare('INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?)');
  db.transaction(() => {
    for (const p of mixPlants()) insert.run(p.owner, p.id, p.name, p.tag);
  })();
  db.exec('ANALYZE');
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return tokens;
}

/** A fresh schema `schema`: returns the URL that selects it and the users' tokens. */
export async function seedMixPostgres(baseUrl: string, schema: string): Promise<{ url: string; tokens: string[] }> {
  const url = await freshSchema(baseUrl, schema);
  const tokens = await prepareMixStore(url);
  const plants = mixPlants();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // One statement in creation order: seq follows the array's order.
    await client.query(
      `INSERT INTO plants (owner, id, name, tag)
       SELECT owner, id, name, tag FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY AS p(owner, id, name, tag, n)
       ORDER BY n`,
      [plants.map((p) => p.owner), plants.map((p) => p.id), plants.map((p) => p.name), plants.map((p) => p.tag)],
    );
    // VACUUM as well: a store that has been running has been vacuumed by autovacuum (it does so after
    // inserts too), which is what lets a page be read from its index alone; a bulk load has not yet.
    await client.query('VACUUM ANALYZE plants');
  } finally {
    await client.end();
  }
  return { url, tokens };
}

/** Per user: its token, then its pages, untagged and per tag, each list starting with the first page. */
export interface MixUserPages {
  readonly token: string;
  readonly groups: string[][];
}

/**
 * Walks every user's pages over HTTP, untagged and for each tag, following the server's own Link
 * headers: cursors are sealed by the server, so real ones can only be collected this way.
 */
export async function collectPages(url: string, tokens: readonly string[]): Promise<MixUserPages[]> {
  const users: MixUserPages[] = tokens.map((token) => ({ token, groups: [] }));
  const walk = async (user: MixUserPages, first: string): Promise<string[]> => {
    const paths = [first];
    for (let path: string | undefined = first; path !== undefined; ) {
      const res: Response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${user.token}` } });
      if (res.status !== 200) throw new Error(`collecting the mix's pages: ${path} answered ${res.status}`);
      await res.arrayBuffer();
      path = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
      if (path !== undefined) paths.push(path);
    }
    return paths;
  };
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < users.length; i = next++) {
      const user = users[i] as MixUserPages;
      user.groups.push(await walk(user, `/plants?limit=${PAGE}`));
      for (const [tag] of TAGS) user.groups.push(await walk(user, `/plants?limit=${PAGE}&tag=${tag}`));
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return users;
}

/** One line per user: token, then each group's paths (space-separated), tab-separated. */
export function writeMixData(file: string, users: readonly MixUserPages[]): void {
  writeFileSync(file, users.map((u) => [u.token, ...u.groups.map((g) => g.join(' '))].join('\t')).join('\n') + '\n');
}

export const countPages = (users: readonly MixUserPages[]) => users.reduce((n, u) => n + u.groups.reduce((m, g) => m + g.length, 0), 0);

const lua = (s: string) => JSON.stringify(s);

/**
 * The wrk script: every request made in Lua from requests formatted once per page at start-up, so
 * that wrk spends little more per request than with a fixed one. A create's answer is the Plant, whose
 * name carries its id; only answers that are one object (`{`) are read, never a page (`[`).
 */
export function mixScript(dataFile: string, out: string, firstId: number, seed: number): string {
  return `${doneFunction(out)}
local users = {}
for line in io.lines(${lua(dataFile)}) do
  local fields = {}
  for f in (line .. "\\t"):gmatch("([^\\t]*)\\t") do fields[#fields + 1] = f end
  local user = { token = fields[1], groups = {} }
  for g = 2, #fields do
    local paths = {}
    for p in fields[g]:gmatch("%S+") do paths[#paths + 1] = p end
    user.groups[#user.groups + 1] = paths
  end
  users[#users + 1] = user
end
local create_tags = { "indoor", "outdoor", "herb" }
local next_k = 0
acks = {}
init = function(args)
  math.randomseed(${seed})
  for _, user in ipairs(users) do
    user.auth = "Bearer " .. user.token
    for g, paths in ipairs(user.groups) do
      local requests = {}
      for i, p in ipairs(paths) do requests[i] = wrk.format("GET", p, { ["Authorization"] = user.auth }) end
      user.groups[g] = requests
    end
  end
end
request = function()
  local u = math.random(#users)
  local user = users[u]
  if math.random() < ${CREATE_SHARE} then
    -- %d: LuaJIT prints large numbers as 1e+12 otherwise
    local id = string.format("%d", ${firstId} + next_k * ${MIX_USERS} + (u - 1))
    next_k = next_k + 1
    local body = '{"id":' .. id .. ',"name":"bench ' .. id .. '"'
    if math.random() < 0.5 then body = body .. ',"tag":"' .. create_tags[math.random(#create_tags)] .. '"' end
    return wrk.format("POST", "/plants", { ["Authorization"] = user.auth, ["Content-Type"] = "application/json" }, body .. "}")
  end
  local group = user.groups[1]
  if math.random() < ${TAG_SHARE} then group = user.groups[1 + math.random(#user.groups - 1)] end
  if #group == 1 or math.random() < ${FIRST_PAGE_SHARE} then return group[1] end
  return group[math.random(2, #group)]
end
response = function(status, headers, body)
  if status >= 200 and status < 300 and body and body:byte(1) == 123 then
    local id = string.match(body, '"bench (%d+)"')
    if id then table.insert(acks, id) end
  end
end
`;
}
