/**
 * The quick path (src/hosting/serve/origin-server.ts), fuzzed against Node's own request handling (issue
 * 60): seeded streams of pipelined requests (./http-streams.ts), every plain form the quick path
 * answers mixed with every form it leaves to Node, delivered in one write, cut at every byte
 * boundary, cut at random, to a client that reads late or half-closes. Each case runs on two
 * connections at once, one to an origin with the quick path and one to an origin without: the bytes
 * received must be equal but for Date's value, and the connection must end the same way: closed,
 * reset or left open (./http-wire.ts).
 *
 * A run reports every distinct kind of difference it found (./http-differential.ts), each with its
 * smallest case shrunk, replayed to show it is no accident of timing, and commands that replay it:
 *
 *   FUZZ_HTTP_CASES=20000 FUZZ_SEED=7 npx vitest run test/fuzz/http.test.ts   # more cases, another seed
 *   FUZZ_SEED=7 FUZZ_HTTP_CASE=random-splits/12 npx vitest run test/fuzz/http.test.ts   # one case, 5 times
 *   FUZZ_HTTP_CASE='a GET and garbage in one write' npx vitest run test/fuzz/http.test.ts   # a regression
 *   FUZZ_HTTP_CASE='{"stream":"GET / HTTP/1.1\r\n...","plan":{...}}' npx vitest ...   # a case as given
 *   FUZZ_HTTP_CONTROL=1 npx vitest run test/fuzz/http.test.ts   # Node's path against itself
 *
 * The control run tells the harness's and Node's own nondeterminism from the quick path's: with the
 * quick path off on both sides, every difference is one of those. (It finds some only for clients
 * that read late.) Every case that differs is run so too before it counts (./http-differential.ts).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSampleSnapshot, type Snapshot } from '../hosting/fixture.js';
import { Differential } from './http-differential.js';
import {
  caseById,
  caseFromJson,
  CREATORS,
  drawCases,
  plainGet,
  streamBytes,
  type Corpus,
  type HttpCase,
  type PlanKind,
  type Request,
} from './http-streams.js';
import { ServerUnderTest } from './http-wire.js';

const CASES = Number(process.env.FUZZ_HTTP_CASES ?? 3000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261201);
/** One case to replay: a generated case's id, a regression's id, or a case as JSON (what a report prints). */
const REPLAY = process.env.FUZZ_HTTP_CASE;
const CONTROL = process.env.FUZZ_HTTP_CONTROL === '1';
/** Generous: a failing run shrinks and replays its failures too. */
const TIMEOUT_MS = Math.max(600_000, CASES * 200);

let snapshot: Snapshot;
let servers: ServerUnderTest[] = [];
let corpus: Corpus;
let differential: Differential;

beforeAll(async () => {
  snapshot = buildSampleSnapshot();
  // In a control run both are Node's path.
  const quick = await ServerUnderTest.start(snapshot.out, !CONTROL);
  const node = await ServerUnderTest.start(snapshot.out, false);
  const control = await ServerUnderTest.start(snapshot.out, false);
  servers = [quick, node, control];
  corpus = await readCorpus(snapshot.out, node.port);
  // A control run shows Node's own nondeterminism: none of it is set aside there.
  const options = { seed: SEED, quietMs: 40, inFlight: 4, replays: 3, reported: 10, shrinkMs: 1000, controls: CONTROL ? 0 : 2 };
  differential = new Differential({ quick, node, control }, options);
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  snapshot?.cleanup();
});

/** The published names, and the ETag of every document a request can name, as the origin answers them. */
async function readCorpus(out: string, port: number): Promise<Corpus> {
  const names = readdirSync(join(out, 'api/v1/users')).sort();
  const paths = ['/api/v1/openapi.json', ...names.flatMap((name) => [`/api/v1/users/${name}`, `/service-api/v1/users/${name}`])];
  const etags = new Map<string, string>();
  for (const path of paths) {
    const answer = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'HEAD' });
    etags.set(path, answer.headers.get('etag')!);
  }
  return { names, etags };
}

async function expectSame(cases: readonly HttpCase[]): Promise<void> {
  const problems = await differential.run(cases);
  if (problems) expect.fail(problems);
}

describe.skipIf(REPLAY !== undefined)(
  `the quick path answers as Node\`s own server does${CONTROL ? ' (control: Node against Node)' : ''}`,
  () => {
    const kinds: { kind: PlanKind; title: string }[] = [
      { kind: 'whole', title: 'streams sent in one write' },
      { kind: 'every-split', title: 'short streams cut in two at every byte boundary' },
      { kind: 'random-splits', title: 'streams cut into up to 9 writes at random' },
      { kind: 'late-reader', title: 'megabytes of answers to a client that reads late' },
    ];
    let cases: Map<PlanKind, HttpCase[]>;
    beforeAll(() => void (cases = drawCases(SEED, CASES, corpus)));

    for (const { kind, title } of kinds) {
      it(`${title} (${kind}, seed ${SEED})`, () => expectSame(cases.get(kind)!), TIMEOUT_MS);
    }
  },
);

// ---- Regressions: hand-written streams known to be tricky -------------------------------------------

/** The largest document the quick path answers (42 KB): a few hundred answers fill any socket buffers. */
const OPENAPI = '/api/v1/openapi.json';
const get = plainGet;
const options = (target: string): Request => ({ form: 'OPTIONS', text: `OPTIONS ${target} HTTP/1.1\r\nHost: origin.test\r\n\r\n` });
const garbage: Request = { form: 'garbage', text: 'garbage\r\n\r\n' };
const repeat = (count: number, request: Request): Request[] => Array.from({ length: count }, () => request);

function regression(id: string, requests: Request[], plan: Partial<HttpCase['plan']> = {}): HttpCase {
  return { id: `regression: ${id}`, requests, plan: { kind: 'whole', cuts: [], readLateMs: 0, halfClose: false, ...plan } };
}

/** A case of `first` in one write and `then` in a later one. */
function twoWrites(id: string, first: Request[], then: Request[], plan: Partial<HttpCase['plan']> = {}): HttpCase {
  return regression(id, [...first, ...then], { kind: 'random-splits', cuts: [streamBytes(first).length], ...plan });
}

const REGRESSIONS: HttpCase[] = [
  // The quick path's answers fill the socket buffers and it stops reading; Node's server takes over
  // at the OPTIONS, but answers the later write's GETs (dave_99, alice) before the OPTIONS it was
  // handed (204).
  twoWrites(
    '1,000 GETs and an OPTIONS, two GETs in a later write, read late: answers in request order',
    [...repeat(1000, get(OPENAPI)), options('/api/v1/users/alice')],
    [get('/api/v1/users/dave_99'), get('/api/v1/users/alice')],
    { readLateMs: 200 },
  ),
  regression('a GET, then the client half-closes', [get('/api/v1/users/alice')], { halfClose: true }),
  regression('pipelined GETs with Connection: close in the middle, bytes after it', [
    get('/api/v1/users/alice'),
    get('/api/v1/users/bob', true),
    get('/api/v1/users/carol.dev'),
    get(CREATORS),
  ]),
  // Node's server drops the answers still queued when a later request in the same read is refused
  // (and sends no 400); the quick path answers the GET before Node's parser sees the rest.
  regression('a GET and garbage in one write', [get('/api/v1/users/alice'), garbage]),
  // Handed over from its first byte, yet answered otherwise than Node's own connection handling does.
  regression('a request the quick path leaves to Node (a chunked body), then garbage, in one write', [
    {
      form: 'a chunked body',
      text: 'GET /api/v1/users/bob HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nxxxx\r\n0\r\n\r\n',
    },
    garbage,
  ]),
  regression('a GET, then a GET with Expect: 100-continue, in one write', [
    get('/api/v1/users/alice'),
    {
      form: 'Expect: 100-continue',
      text: 'GET /api/v1/users/bob HTTP/1.1\r\nHost: origin.test\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
    },
  ]),
  // Node reads at most 64 KiB at a time: a read ends inside a head, while the client does not read.
  regression(
    '64 KiB of GETs of the largest document, from a client that reads 200 ms late',
    [...repeat(Math.ceil((64 * 1024) / get(OPENAPI).text.length) - 1, get(OPENAPI)), get(OPENAPI, true)],
    { kind: 'late-reader', readLateMs: 200 },
  ),
];

describe.skipIf(REPLAY !== undefined)('the quick path answers as Node`s own server does, on streams known to be tricky', () => {
  for (const httpCase of REGRESSIONS) it(httpCase.id.replace(/^regression: /, ''), () => expectSame([httpCase]), 60_000);
});

describe.runIf(REPLAY !== undefined)(`replay of ${REPLAY}`, () => {
  const replayed = (): HttpCase => {
    if (REPLAY!.startsWith('{')) return caseFromJson(REPLAY!);
    return REGRESSIONS.find((c) => c.id === `regression: ${REPLAY}`) ?? caseById(SEED, REPLAY!, corpus);
  };
  it(`the case, seed ${SEED}, 5 times`, () => expectSame(Array.from({ length: 5 }, replayed)), TIMEOUT_MS);
});
