/**
 * `X-Content-Type-Options: nosniff` on every answer of both hosting targets (issue 7.4): every row
 * of the request table (HEAD included), conditional 304s, traversal and malformed requests, and, on
 * the origin server, paths it does not own. Netlify is its production rule engine with netlify.toml
 * (both readings of where header rules match) plus the edge function; the origin server is `serve`'s
 * server over real HTTP.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import profileApi from '../../netlify/edge-functions/profile-api/index.js';
import { createOrigin, listen } from '../../src/hosting/serve/origin.js';
import { buildSampleSnapshot, REPO, type Snapshot } from '../hosting/fixture.js';
import { startNetlifySim, type NetlifySim } from '../hosting/netlify-sim.js';
import { fromResponse, requestTable, send, type Answer } from '../hosting/request-table.js';

const ROWS = requestTable();
const ABUSE = [
  '/api/v1/users/%2E%2E%2F%2E%2E%2F_errors%2Fnot-found.json',
  '/api/v1/users/..%5C..%5Cetc',
  '/api/v1/users/%E0%A4%A',
  '/api/v1/users?username=%2e%2e',
  '/service-api/v1/users/ALICE%00',
  '/.profile-snapshot/manifest',
  '/%2e%2e/%2e%2e/etc/passwd',
];

let snapshot: Snapshot;
let sims: NetlifySim[] = [];
let origin: string;
let closeOrigin: () => Promise<void>;
beforeAll(async () => {
  snapshot = buildSampleSnapshot();
  const common = { site: snapshot.out, tomlPath: join(REPO, 'netlify.toml'), edgeFunctions: { 'profile-api': profileApi } };
  sims = [await startNetlifySim({ ...common, headerPath: 'requested' }), await startNetlifySim({ ...common, headerPath: 'rewritten' })];
  const { server } = createOrigin({ out: snapshot.out });
  origin = `http://127.0.0.1:${(await listen(server, 0, '127.0.0.1')).port}`;
  closeOrigin = () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
});
afterAll(async () => {
  for (const sim of sims) await sim.close();
  await closeOrigin?.();
  snapshot?.cleanup();
});

const missing = (answers: [string, Answer][]) =>
  answers.filter(([, a]) => a.headers['x-content-type-options'] !== 'nosniff').map(([what, a]) => `${what}: ${a.status}`);

describe('X-Content-Type-Options: nosniff', () => {
  it('the origin server: every row (HEAD and paths it does not own included), 304s, abuse', async () => {
    const answers: [string, Answer][] = [];
    for (const row of ROWS) answers.push([`${row.method} ${row.target}`, await send(origin, row.method, row.target)]);
    for (const target of ABUSE) answers.push([`GET ${target}`, await send(origin, 'GET', target)]);
    for (const target of ['/api/v1/users/alice', '/api/v1/users/ALICE', '/service-api/v1/creators', '/api/v1/users?username=Alice']) {
      const first = await send(origin, 'GET', target);
      const again = await send(origin, 'GET', target, { 'If-None-Match': first.headers.etag ?? '' });
      expect(again.status, target).toBe(304);
      answers.push([`304 ${target}`, again]);
    }
    expect(answers.length).toBeGreaterThan(ROWS.length);
    expect(missing(answers)).toEqual([]);
  });

  it('Netlify (both header readings) and the edge function called directly: every row the site answers, abuse', async () => {
    const answers: [string, Answer][] = [];
    for (const sim of sims) {
      for (const row of ROWS) {
        if ('outside' in row.expected) continue; // Netlify's own 404 for paths that are not the site's
        answers.push([`${sim.origin} ${row.method} ${row.target}`, await send(sim.origin, row.method, row.target)]);
      }
      for (const target of ABUSE.filter((t) => t.startsWith('/api/') || t.startsWith('/service-api/'))) {
        answers.push([`${sim.origin} GET ${target}`, await send(sim.origin, 'GET', target)]);
      }
    }
    for (const row of ROWS) {
      if ('outside' in row.expected || !sims[0]!.edgeFunctionFor(row.target.split('?')[0]!)) continue;
      const request = new Request(`${sims[0]!.origin}${row.target}`, { method: row.method });
      answers.push([
        `edge ${row.method} ${row.target}`,
        await fromResponse(await profileApi(request, { next: () => fetch(`${sims[0]!.origin}${row.target}`, { method: row.method }) })),
      ]);
    }
    expect(answers.filter(([w]) => w.startsWith('edge')).length).toBeGreaterThan(30);
    expect(missing(answers)).toEqual([]);
  });
});
