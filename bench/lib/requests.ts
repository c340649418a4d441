// The requests the bench makes itself, outside wrk: to check what a server answers, and to take the bytes
// a bare server is to answer from plantstore's own answers.
import { PAGE } from './mix.js';

/** The list every list row loads: the bench user's first page. */
export const LIST_PATH = `/plants?limit=${PAGE}`;

export const auth = (token: string) => ({ authorization: `Bearer ${token}` });

const headersOf = (r: Response) => ({
  'content-type': r.headers.get('content-type') ?? '',
  ...(r.headers.get('link') ? { link: r.headers.get('link') as string } : {}),
});

export interface BareAnswer {
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** What bench/servers/bare-server.mjs answers: one answer to every GET, one to every POST. */
export interface BareAnswers {
  readonly list: BareAnswer;
  readonly create: BareAnswer;
}

/**
 * What plantstore at `url` answers `token`'s first page and a create of `createId`, so that a bare
 * server answers the very same bytes and only the work behind them differs.
 */
export async function answersOf(url: string, token: string, createId: number): Promise<BareAnswers> {
  const listed = await fetch(`${url}${LIST_PATH}`, { headers: auth(token) });
  const created = await fetch(`${url}/plants`, {
    method: 'POST',
    headers: { ...auth(token), 'content-type': 'application/json' },
    body: JSON.stringify({ id: createId, name: 'bench plant' }),
  });
  return {
    list: { body: await listed.text(), headers: headersOf(listed) },
    create: { body: await created.text(), headers: headersOf(created) },
  };
}

/** The body of `path` as `token` sees it, and its status. */
export async function pageOf(url: string, token: string, path = LIST_PATH): Promise<{ status: number; body: string }> {
  const res = await fetch(`${url}${path}`, { headers: auth(token) });
  return { status: res.status, body: await res.text() };
}
