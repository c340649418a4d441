import { NOT_AN_API_ERROR, PlantStoreError } from './error.js';

/**
 * The target of the `rel="next"` link in a Link header (RFC 8288), if there is one. Each link is
 * `<target>` followed by its parameters up to the next `<`; `rel` may be quoted and hold several types.
 */
export function nextTarget(header: string | null): string | undefined {
  if (header === null) return undefined;
  for (const [, target, params] of header.matchAll(/<([^>]*)>([^<]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(params ?? '');
    const types = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (types.includes('next')) return target;
  }
  return undefined;
}

/**
 * The URL of the next page. The server writes `</plants?…>`, relative to the service's root, which is
 * `base` (the client's baseUrl, that may sit under a path prefix behind a proxy): a target starting with
 * one '/' is resolved under it, anything else by RFC 3986. A link to another origin is refused rather
 * than followed, since the request would carry the bearer token there.
 */
export function nextUrl(target: string, base: URL): URL {
  let url: URL;
  try {
    url = /^\/(?!\/)/.test(target) ? new URL(target.slice(1), base) : new URL(target, base);
  } catch {
    throw new PlantStoreError(200, NOT_AN_API_ERROR, `the next page's link is not a URL: ${JSON.stringify(target)}`);
  }
  if (url.origin !== base.origin) {
    throw new PlantStoreError(200, NOT_AN_API_ERROR, `the next page's link points at another origin (${url.origin}); not followed`);
  }
  return url;
}
