/**
 * The request table against the three targets. Done when every row answers the same through all:
 *   (a) netlify.toml on Netlify's production rule engine, with edge functions and file shadowing
 *       emulated as documented, over real HTTP (both readings of where header rules match);
 *   (b) the edge function called directly with Request objects and a stub context;
 *   (c) the origin server (`serve`) over real HTTP on 127.0.0.1.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import profileApi from '../../netlify/edge-functions/profile-api/index.js';
import { buildSampleSnapshot, REPO, serveSnapshot, type Snapshot } from './fixture.js';
import { startNetlifySim, type NetlifySim } from './netlify-sim.js';
import { fromResponse, requestTable, send, tableFailures, type Answer } from './request-table.js';

const ROWS = requestTable();
let snapshot: Snapshot;
let simRequested: NetlifySim;
let simRewritten: NetlifySim;
let origin: string;
let closeOrigin: () => Promise<void>;

beforeAll(async () => {
  snapshot = buildSampleSnapshot();
  const common = { site: snapshot.out, tomlPath: join(REPO, 'netlify.toml'), edgeFunctions: { 'profile-api': profileApi } };
  simRequested = await startNetlifySim({ ...common, headerPath: 'requested' });
  simRewritten = await startNetlifySim({ ...common, headerPath: 'rewritten' });
  ({ origin, close: closeOrigin } = await serveSnapshot(snapshot.out));
});

afterAll(async () => {
  await simRequested?.close();
  await simRewritten?.close();
  await closeOrigin?.();
  snapshot?.cleanup();
});

/** Runs every row through one target and reports all failing rows at once. */
async function runTable(target: (row: (typeof ROWS)[number]) => Promise<Answer>) {
  expect(await tableFailures(target, ROWS)).toEqual([]);
}

describe('the request table', () => {
  it('has every form x case x state, and the extra rows', () => {
    expect(ROWS.length).toBeGreaterThan(150);
    expect(new Set(ROWS.map((r) => r.name)).size).toBe(ROWS.length);
  });

  it('(a) Netlify: netlify.toml on netlify-redirector, header rules matched on the requested path', async () => {
    await runTable((row) => send(simRequested.origin, row.method, row.target));
  });

  it('(a) Netlify: header rules matched on the rewritten path', async () => {
    await runTable((row) => send(simRewritten.origin, row.method, row.target));
  });

  it('(a) Netlify: the gzip variant of the list is a dot file, never deployed, so never a path of its own', async () => {
    expect(existsSync(join(snapshot.out, 'service-api/v1/.creators.gz'))).toBe(true);
    for (const sim of [simRequested, simRewritten]) {
      for (const target of ['/service-api/v1/.creators.gz', '/service-api/v1/%2Ecreators.gz', '/service-api/v1/.creators.gz?x=1']) {
        const answer = await send(sim.origin, 'GET', target, { 'accept-encoding': 'gzip' });
        expect(answer.status, target).toBe(404);
        expect(JSON.parse(answer.body).error.code, target).toBe('NOT_FOUND');
      }
      // Netlify compresses the list itself for a client that accepts it; the site serves the list.
      const list = await send(sim.origin, 'GET', '/service-api/v1/creators', { 'accept-encoding': 'gzip' });
      expect(list.raw).toEqual(readFileSync(join(snapshot.out, 'service-api/v1/creators')));
    }
  });

  it('(b) the edge function called directly', async () => {
    await runTable(async (row) => {
      const url = `${simRequested.origin}${row.target}`;
      const request = new Request(url, { method: row.method });
      // For a path the function does not own it continues with the rest of Netlify (the simulator).
      const context = { next: () => fetch(new Request(url, { method: row.method })) };
      return fromResponse(await profileApi(request, context));
    });
  });

  it('(c) the origin server over HTTP', async () => {
    await runTable((row) => send(origin, row.method, row.target));
  });

  it('answers the same bodies through all three for every JSON row', async () => {
    const mismatches: string[] = [];
    for (const row of ROWS) {
      if ('outside' in row.expected || row.method !== 'GET') continue;
      const a = await send(simRequested.origin, row.method, row.target);
      const c = await send(origin, row.method, row.target);
      const b = await fromResponse(
        await profileApi(new Request(`${simRequested.origin}${row.target}`), { next: () => fetch(`${simRequested.origin}${row.target}`) }),
      );
      if (a.body !== c.body || b.body !== c.body) mismatches.push(`${row.target}`);
    }
    expect(mismatches).toEqual([]);
  });
});

describe('edge function declarations', () => {
  it('never run for plain lower-case profiles, the creators list or error paths; run where code is needed', () => {
    for (const path of [
      '/api/v1/users/alice',
      '/service-api/v1/users/dave_99',
      '/api/v1/users/carol.dev',
      '/service-api/v1/creators',
      '/api/v1/nope',
      '/api/v1/users/nobody',
      '/_errors/not-found.json',
    ]) {
      expect(simRequested.edgeFunctionFor(path), path).toBeUndefined();
    }
    for (const path of ['/api/v1/users/Alice', '/service-api/v1/users/DAVE_99', '/api/v1/users', '/api/v1/users/']) {
      expect(simRequested.edgeFunctionFor(path), path).toBe('profile-api');
    }
  });
});

describe('abuse through the edge function', () => {
  const ATTEMPTS = [
    '/api/v1/users/%2E%2E%2F%2E%2E%2F_errors%2Fnot-found.json',
    '/api/v1/users/A%2F..%2F..%2F.profile-snapshot%2Fmanifest',
    '/service-api/v1/users/..%5C..%5CSECRET',
    '/api/v1/users?username=..%2F..%2F.profile-snapshot%2Fmanifest',
    '/api/v1/users?username=%2E%2E',
    `/api/v1/users/${'A'.repeat(8000)}`,
    '/api/v1/users?username=ALICE%00',
  ];

  it('never reaches anything but the canonical files: a JSON 404 through Netlify and the function alike', async () => {
    for (const target of ATTEMPTS) {
      for (const answer of [
        await send(simRequested.origin, 'GET', target),
        await fromResponse(
          await profileApi(new Request(`${simRequested.origin}${target}`), { next: () => fetch(`${simRequested.origin}${target}`) }),
        ),
        await send(origin, 'GET', target),
      ]) {
        expect(answer.status, target).toBe(404);
        expect(answer.headers['content-type'], target).toBe('application/json; charset=utf-8');
        expect(JSON.parse(answer.body).error.code, target).toBe('USER_NOT_FOUND');
      }
    }
  });
});
