// Scrapes of a server's /metrics while it is loaded, as Prometheus would make them, so that the rows with
// metrics on pay for what production pays; a scrape also reads the list cache's counters for the notes.
import type { System } from './systems.js';

/**
 * Prometheus scrapes every 15 s by default; the bench scrapes three times as often (and once as a load
 * starts), only while that server is loaded, so the scrapes cost that server and never the others.
 */
export const SCRAPE_INTERVAL_MS = 5000;

export interface Scraper {
  readonly url: string;
  /** Which server, where several rows share a name (its log file's name). */
  readonly label?: string;
  scrapes: number;
  failures: number;
  bytes: number;
  /** The list cache's lookups since the server started, as the last scrape counted them. */
  cacheHits?: number | undefined;
  cacheMisses?: number | undefined;
}

/** A counter's value in a Prometheus text exposition, or undefined. */
function counter(text: string, name: string): number | undefined {
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/** Starts scraping (none without a scraper); the function returned stops it. */
export function scrapeDuring(scraper: Scraper | undefined): () => void {
  if (scraper === undefined) return () => undefined;
  const once = (): void => {
    fetch(scraper.url).then(async (res) => {
      const text = await res.text();
      scraper.scrapes++;
      scraper.bytes = text.length;
      if (res.status !== 200 || !text.includes('plantstore_http_requests_total')) scraper.failures++;
      scraper.cacheHits = counter(text, 'plantstore_list_cache_hits_total');
      scraper.cacheMisses = counter(text, 'plantstore_list_cache_misses_total');
    }, () => scraper.failures++);
  };
  once();
  const timer = setInterval(once, SCRAPE_INTERVAL_MS);
  return () => clearInterval(timer);
}

/** The note on one server's scrapes: how many, whether each answered, their size, the list cache's hit rate. */
export function scrapeNote(system: System, scraper: Scraper): string {
  const { cacheHits: hits, cacheMisses: misses } = scraper;
  return `scrapes (${system.name}${scraper.label ? `, ${scraper.label}` : ''}): ${scraper.scrapes} every ${SCRAPE_INTERVAL_MS / 1000} s during its loads, ` +
    `${scraper.failures === 0 ? 'every one answered 200' : `${scraper.failures} FAILED`}, ${Math.round(scraper.bytes / 1024)} KB each` +
    (hits === undefined || misses === undefined || hits + misses === 0 ? '' :
      `; list cache ${(100 * hits / (hits + misses)).toFixed(0)}% hits since start`);
}
