import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`; .ci/run installs it when missing), driven by
 * playwright-core: nothing downloads a browser build of its own.
 */
export const CHROMIUM = '/usr/bin/chromium';

export const chromiumMissing = (): boolean => !existsSync(CHROMIUM);

/** Generous for a loaded 2-core machine: each bounds one wait, none the whole test. */
export const BROWSER_TIMEOUT_MS = 60_000;

/**
 * A headless Chromium, with no sync, component updates or other traffic of its own. Playwright gives it
 * a fresh profile in a temporary directory, removed when it closes.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: BROWSER_TIMEOUT_MS,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run',
    ],
  });
}

export interface Watched {
  readonly page: Page;
  /** Every console error, page error, failed request, 4xx/5xx answer and request to another origin. */
  readonly problems: string[];
}

/**
 * A page of `context` that records whatever would mean the reference is broken or leaks: any console
 * error (Chromium reports a CSP violation there; the init script reports it again, with the directive),
 * any uncaught page error, any request that failed or was answered 4xx/5xx, and any request to another
 * origin than `origin`, which is refused as well as recorded, so nothing leaves the machine.
 */
export async function watchedPage(context: BrowserContext, origin: string): Promise<Watched> {
  const problems: string[] = [];
  await context.route((url) => url.origin !== origin, async (route) => {
    problems.push(`request to another origin: ${route.request().url()}`);
    await route.abort('blockedbyclient');
  });
  // A string, since the test files are not compiled with the DOM's types.
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (e) =>
      console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline')));`,
  });
  const page = await context.newPage();
  page.setDefaultTimeout(BROWSER_TIMEOUT_MS);
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed request: ${r.method()} ${r.url()}: ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`answer ${r.status()}: ${r.request().method()} ${r.url()}`);
  });
  return { page, problems };
}

/**
 * Swagger UI's block for one operation (or webhook), found by what it shows (method and path), not by
 * its element id, which follows the document's operationId and tag.
 */
export function operation(page: Page, method: string, path: string, within = '.swagger-ui'): Locator {
  return page
    .locator(`${within} .opblock.opblock-${method.toLowerCase()}`)
    .filter({ has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });
}

/** Pastes `token` into the Authorize dialog for the security scheme `scheme`, as a person would. */
export async function authorize(page: Page, scheme: string, token: string): Promise<void> {
  await page.locator('.auth-wrapper .authorize').click();
  const dialog = page.locator('.modal-ux');
  const form = dialog.locator('.auth-container').filter({ has: page.locator('h4 code', { hasText: new RegExp(`^${scheme}$`) }) });
  await form.locator('input').fill(token);
  await form.getByRole('button', { name: 'Apply credentials' }).click();
  // Once applied, the form offers to log out instead.
  await form.getByRole('button', { name: 'Remove authorization' }).or(form.locator('button', { hasText: 'Logout' })).first().waitFor();
  await dialog.locator('.close-modal').click();
  await dialog.waitFor({ state: 'detached' });
}

/** Opens `op`, presses "Try it out", fills the body if given, presses Execute; returns the answer's status and body text. */
export async function tryIt(op: Locator, body?: string): Promise<{ status: string; body: string }> {
  await op.locator('.opblock-summary-control').click();
  await op.getByRole('button', { name: 'Try it out' }).click();
  if (body !== undefined) await op.locator('textarea.body-param__text').fill(body);
  await op.getByRole('button', { name: 'Execute' }).click();
  const response = op.locator('.live-responses-table .response').first();
  await response.waitFor();
  return {
    status: (await response.locator('.response-col_status').innerText()).trim(),
    body: await response.locator('.response-col_description').innerText(),
  };
}
