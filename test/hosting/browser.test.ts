/**
 * CORS where it matters: a real headless Chromium (driven by playwright-core) loads a page from one
 * origin that fetches profiles, a 404 and the creators list from another origin, and reads the JSON:
 * the origin server (`serve`), and the Cloudflare Worker in workerd over the R2 bucket `publish`
 * filled. A control request to a path without CORS headers must be blocked, proving the browser
 * really enforces CORS in this test.
 *
 * The browser comes from npm (@sparticuz/chromium) or CHROMIUM_PATH (see browser.ts). When none can
 * start this test fails: it never skips, and nothing downloads a browser.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrigin, listen } from '../../src/hosting/serve/origin.js';
import { launchBrowser } from './browser.js';
import { publishSample, startWorker, type PublishedSample, type WorkerHost } from './cdn-fixture.js';

let sample: PublishedSample;
let worker: WorkerHost;
let api: Server;
let page: Server;
let apiOrigin: string;
let pageOrigin: string;
let context: BrowserContext;
let profileDir: string;

const PAGE = `<!doctype html><meta charset="utf-8"><title>profile client</title>
<script>
  // Runs in the page's origin; every request below is cross-origin.
  async function call(url, init) {
    try {
      const r = await fetch(url, init);
      const text = await r.text();
      let json = null;
      try { json = JSON.parse(text); } catch {}
      return { ok: true, status: r.status, contentType: r.headers.get('content-type'), cacheControl: r.headers.get('cache-control'), json };
    } catch (e) {
      return { ok: false, error: String(e) };
    }
  }
</script>`;

async function listenOn(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const a = server.address();
  if (a === null || typeof a === 'string') throw new Error('no address');
  return `http://127.0.0.1:${a.port}`;
}

beforeAll(async () => {
  sample = await publishSample();
  worker = await startWorker(sample.objects);
  api = createOrigin({ out: sample.snapshot.out }).server;
  const address = await listen(api, 0, '127.0.0.1');
  apiOrigin = `http://127.0.0.1:${address.port}`;
  page = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(PAGE);
  });
  pageOrigin = await listenOn(page);
  expect(pageOrigin).not.toBe(apiOrigin);
  profileDir = mkdtempSync(join(tmpdir(), 'profile-snapshot-chromium-'));
  context = await launchBrowser(profileDir);
}, 60_000);

afterAll(async () => {
  await context?.close();
  if (profileDir) rmSync(profileDir, { recursive: true, force: true });
  await new Promise((r) => (api ? api.close(r) : r(undefined)));
  api?.closeAllConnections();
  await new Promise((r) => (page ? page.close(r) : r(undefined)));
  await worker?.close();
  await sample?.close();
});

interface Result {
  ok: boolean;
  status?: number;
  contentType?: string;
  cacheControl?: string;
  json?: any;
  error?: string;
}

describe('a browser on another origin', () => {
  it.each([
    ['serve', () => apiOrigin],
    ['the Worker in workerd', () => worker.origin],
  ])('reads profiles, a 404 and the creators list as JSON from %s, preflighted requests included', async (_name, base) => {
    const tab = await context.newPage();
    await tab.goto(`${pageOrigin}/`);
    const results = (await tab.evaluate(async (base) => {
      const w = globalThis as unknown as { call: (url: string, init?: RequestInit) => Promise<unknown> };
      return {
        profile: await w.call(`${base}/api/v1/users/ALICE`, { headers: { Accept: 'application/json' } }),
        query: await w.call(`${base}/api/v1/users?username=Dave_99`),
        missing: await w.call(`${base}/api/v1/users/nobody`),
        required: await w.call(`${base}/api/v1/users?username=`),
        creators: await w.call(`${base}/service-api/v1/creators`),
        // A custom header makes the browser send an OPTIONS preflight first.
        preflighted: await w.call(`${base}/service-api/v1/users/carol.dev`, { headers: { 'X-Requested-With': 'profile-client' } }),
        // Control: a path that is not the API's carries no CORS headers, so the browser must block it.
        control: await w.call(`${base}/api/avatar?u=alice`),
      };
    }, base())) as Record<string, Result>;

    expect(results.profile).toMatchObject({
      ok: true,
      status: 200,
      contentType: 'application/json; charset=utf-8',
      cacheControl: 'public, s-maxage=30, stale-while-revalidate=60',
    });
    expect(results.profile!.json).toMatchObject({ success: true, data: { username: 'Alice', status: 'active' }, meta: { version: 'v1' } });
    expect(results.query).toMatchObject({
      ok: true,
      status: 200,
      json: { data: { username: 'dave_99', status: 'suspended', banInfo: { isBanned: true } } },
    });
    expect(results.missing).toMatchObject({
      ok: true,
      status: 404,
      json: { success: false, error: { status: 404, code: 'USER_NOT_FOUND' } },
    });
    expect(results.required).toMatchObject({ ok: true, status: 400, json: { success: false, error: { code: 'USERNAME_REQUIRED' } } });
    expect(results.creators).toMatchObject({ ok: true, status: 200, json: { success: true } });
    const creators = results.creators!.json.data as { username: string; status: string }[];
    expect(creators.length).toBeGreaterThan(5);
    expect(creators.every((u) => u.status === 'active')).toBe(true);
    expect(results.preflighted).toMatchObject({ ok: true, status: 200, json: { data: { username: 'Carol.Dev' } } });
    expect(results.control!.ok).toBe(false);
    expect(results.control!.error).toContain('TypeError');
    await tab.close();
  });

  it.each([
    ['serve', () => apiOrigin],
    ['the Worker in workerd', () => worker.origin],
  ])('gets the creators list gzip-encoded from %s, and decodes it to exactly the list', async (_name, base) => {
    const tab = await context.newPage();
    await tab.goto(`${pageOrigin}/`);
    const encodings: (string | undefined)[] = [];
    tab.on('response', (response) => {
      if (response.url().endsWith('/service-api/v1/creators')) encodings.push(response.headers()['content-encoding']);
    });
    const text = await tab.evaluate(async (url) => (await fetch(url)).text(), `${base()}/service-api/v1/creators`);
    expect(encodings).toEqual(['gzip']);
    expect(text).toBe(readFileSync(join(sample.snapshot.out, 'service-api/v1/creators'), 'utf8'));
    await tab.close();
  });
});
