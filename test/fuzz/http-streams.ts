/**
 * Request streams for the quick path's differential fuzz (./http.test.ts): seeded pipelines of
 * HTTP/1.x requests that mix the plain forms the quick path answers from memory
 * (src/hosting/serve/request-head.ts) with every form it leaves to Node's own server, and the plans by
 * which a client delivers one: how its bytes are cut into writes, whether it reads its answers late,
 * whether it half-closes after its last write.
 *
 * Every case is drawn from its own generator, seeded by FUZZ_SEED and the case's id alone, so a
 * case replays from its id whatever the number of cases around it.
 */
import { prng } from '../../src/seed/synthetic.js';

/** What the generator knows of the snapshot served. */
export interface Corpus {
  /** Published usernames, as published (lower case). */
  names: readonly string[];
  /** The ETag each document is answered with, by the path of its canonical target (`/api/v1/users/alice`). */
  etags: ReadonlyMap<string, string>;
}

/** One request as sent: its bytes (latin1) and the name of its form, for reports. */
export interface Request {
  form: string;
  text: string;
}

export type PlanKind = 'whole' | 'every-split' | 'random-splits' | 'late-reader';

/** How a client delivers a stream. */
export interface Plan {
  kind: PlanKind;
  /** Offsets at which the stream is cut into writes, ascending, each inside the stream. */
  cuts: number[];
  /** The client reads nothing until this long after its last write (0: it reads as answers come). */
  readLateMs: number;
  /**
   * The client half-closes (socket.end()) after its last write: once the server has answered it,
   * or (a client that reads late) once it has read its answers (./http-wire.ts says why).
   */
  halfClose: boolean;
}

export interface HttpCase {
  /** `<kind>/<n>` (`every-split/<n>@<cut>`): with the seed, all it takes to draw the case again. */
  id: string;
  requests: Request[];
  plan: Plan;
}

/** The stream's bytes. */
export const streamBytes = (requests: readonly Request[]): Buffer => Buffer.from(requests.map((r) => r.text).join(''), 'latin1');

/** A seeded source of choices (mulberry32, as the synthetic stores use). */
export class Dice {
  private readonly next: () => number;

  constructor(seed: number) {
    this.next = prng(seed);
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One of `choices`, each as likely as its weight. */
  weighted<T>(choices: readonly (readonly [number, T])[]): T {
    let roll = this.next() * choices.reduce((sum, [weight]) => sum + weight, 0);
    for (const [weight, choice] of choices) if ((roll -= weight) < 0) return choice;
    return choices.at(-1)![1];
  }

  /** `text` with each letter's case flipped or not at random (all upper now and then). */
  mixCase(text: string): string {
    if (this.chance(0.15)) return text.toUpperCase();
    return [...text].map((c) => (this.chance(0.3) ? c.toUpperCase() : c)).join('');
  }
}

/** The seed of one case: the run's seed and the case's id, mixed so that neighbouring ids draw unrelated cases. */
function caseSeed(seed: number, id: string): number {
  let hash = seed >>> 0;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x9e3779b1) >>> 0;
  return (hash ^ (hash >>> 16)) >>> 0;
}

// ---- Requests -------------------------------------------------------------------------------------

/** A request before it is written out; forms change one part of a plain one. */
interface Parts {
  method: string;
  target: string;
  version: string;
  /** Header lines, without line ends. */
  headers: string[];
  body: string;
  /** The line end (LF alone in one form). */
  eol: string;
  /** The form already decides the Connection header (or the connection's fate): no `Connection: close` is added to it. */
  fixedConnection: boolean;
}

const render = (p: Parts): string =>
  `${p.method} ${p.target} HTTP/${p.version}${p.eol}${p.headers.map((h) => h + p.eol).join('')}${p.eol}${p.body}`;

const ALIASES = ['/api/v1/users', '/service-api/v1/users'] as const;
const MISSES = ['nobody', 'mallory', 'sybil', 'alice.', '-', 'x~y', '.hidden', 'a'.repeat(65), 'ALICE_2', '_'];
const ELSEWHERE = ['/', '/elsewhere', '/api/avatar/alice', '/api/v2/users/alice', '/service-api', '/api/v1/users/alice/extra'];
const ERROR_ROUTES = ['/api/v1/users', '/api/v1/users/', '/service-api/v1/users', '/api/v1/nope', '/api/v1', '/service-api/v1/'];
const DOT_SEGMENTS = ['/api/v1/users/../users/NAME', '/api/v1/users/./NAME', '/api/v1/./users/NAME', '/api/v1/users/NAME/..'];
const OPENAPI = '/api/v1/openapi.json';
/** The creators list: plain, but it has a gzip variant, so serve-handler's path answers it, on Node's. */
export const CREATORS = '/service-api/v1/creators';
const EXTRAS = [
  'User-Agent: fuzz/1.0',
  'Accept: application/json',
  'Accept-Encoding: gzip, br',
  'Range: bytes=0-3',
  'X-Forwarded-For: 203.0.113.7',
  'Cache-Control: no-cache',
  'Cookie: a=b',
  'Origin: https://example.com',
  'Access-Control-Request-Method: GET',
  'X-Empty:',
];

/** A plain target, and the canonical path of the document it names (for its ETag), if it names one. */
function plainTarget(dice: Dice, corpus: Corpus): { target: string; document?: string } {
  const name = dice.pick(corpus.names);
  const alias = dice.pick(ALIASES);
  return dice.weighted<() => { target: string; document?: string }>([
    [40, () => ({ target: `${alias}/${dice.mixCase(name)}`, document: `${alias}/${name}` })],
    [10, () => ({ target: `${alias}/${dice.pick(MISSES)}` })],
    [12, () => ({ target: `/api/v1/users?${queryFor(dice, name)}`, document: `/api/v1/users/${name}` })],
    [8, () => ({ target: dice.pick(ERROR_ROUTES) })],
    [5, () => ({ target: OPENAPI, document: OPENAPI })],
    [2, () => ({ target: CREATORS })],
    [4, () => ({ target: dice.pick(DOT_SEGMENTS).replace('NAME', dice.mixCase(name)), document: `/api/v1/users/${name}` })],
    [2, () => ({ target: dice.pick(ELSEWHERE) })],
  ])();
}

function queryFor(dice: Dice, name: string): string {
  const mixed = dice.mixCase(name);
  return dice.weighted([
    [10, `username=${mixed}`],
    [2, `username=${dice.pick(MISSES)}&username=${mixed}`],
    [2, `username=${mixed}&username=${dice.pick(MISSES)}`],
    [2, `utm_source=x&username=${mixed}`],
    [1, 'username='],
    [1, 'username'],
    [1, 'other=1'],
    [1, ''],
  ]);
}

/** An If-None-Match value: the document's own ETag in every form a client sends, or one that does not match. */
function ifNoneMatch(dice: Dice, corpus: Corpus, document: string | undefined): string {
  const etag = (document && corpus.etags.get(document)) ?? '"no-such-etag"';
  const other = dice.pick([...corpus.etags.values()]);
  return dice.weighted([
    [6, etag],
    [2, `W/${etag}`],
    [2, `"stale", ${etag}`],
    [2, '*'],
    [2, '"0-stale"'],
    [2, other],
    [1, `\t${etag} `],
  ]);
}

const connectionLine = (dice: Dice, value: 'close' | 'keep-alive'): string =>
  `${dice.pick(['Connection', 'connection', 'CONNECTION'])}:${dice.pick([' ', '', '  '])}${dice.mixCase(value)}`;

const hostLine = (dice: Dice): string =>
  dice.pick(['Host: origin.test', 'host: localhost:8080', 'HOST:x', 'Host:  127.0.0.1 ', 'Host: profiles.example.com']);

/** A GET or HEAD the quick path reads: a plain target, one Host, perhaps If-None-Match, keep-alive, harmless extras. */
function plainParts(dice: Dice, corpus: Corpus): Parts {
  const { target, document } = plainTarget(dice, corpus);
  const headers = [hostLine(dice)];
  if (dice.chance(0.3)) headers.push(`${dice.pick(['If-None-Match', 'if-none-match'])}: ${ifNoneMatch(dice, corpus, document)}`);
  if (dice.chance(0.2)) headers.push(connectionLine(dice, 'keep-alive'));
  while (dice.chance(0.3)) headers.push(dice.pick(EXTRAS));
  // Host need not come first.
  if (dice.chance(0.3)) headers.push(headers.shift()!);
  return { method: dice.chance(0.8) ? 'GET' : 'HEAD', target, version: '1.1', headers, body: '', eol: '\r\n', fixedConnection: false };
}

type Mutation = (p: Parts, dice: Dice) => void;

const withHeader =
  (...lines: string[]): Mutation =>
  (p) =>
    p.headers.push(...lines);

/** A body of `length` bytes. */
const filler = (length: number) => 'x'.repeat(length);

/**
 * Forms request-head.ts leaves to Node's server that Node answers and goes on reading after, each
 * as a change to a plain request: each a different reason for the quick path to hand over.
 */
const ANSWERED_FORMS: Record<string, Mutation> = {
  OPTIONS: (p) => ((p.method = 'OPTIONS'), p.headers.push('Access-Control-Request-Method: GET')),
  'OPTIONS *': (p) => ((p.method = 'OPTIONS'), (p.target = '*')),
  'POST with a body': (p, dice) => {
    p.method = 'POST';
    p.body = filler(dice.int(0, 40));
    p.headers.push(`Content-Length: ${p.body.length}`);
  },
  'another method': (p, dice) => (p.method = dice.pick(['PUT', 'DELETE', 'PATCH', 'TRACE'])),
  'HTTP/1.0 keep-alive': (p) => ((p.version = '1.0'), p.headers.push('Connection: keep-alive'), (p.fixedConnection = true)),
  'a percent-encoded target': (p, dice) =>
    (p.target = dice.pick([
      '/api/v1/users/al%69ce',
      '/api/v1/users/%2e%2e/users/bob',
      '/api/v1/users%2Falice',
      '/api/v1/users/a%20b',
      '/api/v1/users/%zz',
    ])),
  'an absolute-form target': (p) => (p.target = `http://origin.test${p.target}`),
  'a // target': (p) => (p.target = `/${p.target}`),
  'a target with a fragment or quote': (p, dice) => (p.target = `${p.target}${dice.pick(['#top', '"', '+x', '\\x'])}`),
  'an empty Host': (p) => (p.headers = [...p.headers.filter((h) => !/^host:/i.test(h)), 'Host:']),
  'two Hosts': withHeader('Host: other.test'),
  'two If-None-Match': withHeader('If-None-Match: "a"', 'If-None-Match: "b"'),
  'two Connection': (p) => (p.headers.push('Connection: keep-alive', 'Connection: keep-alive'), (p.fixedConnection = true)),
  'Connection: another token': (p) => (p.headers.push('Connection: keep-alive, x-trace'), (p.fixedConnection = true)),
  'Content-Length: 0': withHeader('Content-Length: 0'),
  'a chunked body': (p, dice) => {
    const body = filler(dice.int(1, 20));
    p.headers.push('Transfer-Encoding: chunked');
    p.body = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  },
  'Expect: 100-continue': withHeader('Expect: 100-continue'),
  'a byte above 0x7e': withHeader('X-Name: caf\xe9'),
  'a head over 8 KiB': (p, dice) => p.headers.push(`X-Pad: ${filler(dice.int(8200, 15_000))}`),
};

/**
 * Forms after which Node's server reads no more requests on the connection: it refuses them (400,
 * 431), closes after answering (HTTP/1.0), or takes what follows for another protocol (Upgrade).
 */
const FINAL_FORMS: Record<string, Mutation> = {
  'a lower-case method': (p) => (p.method = p.method.toLowerCase()),
  'HTTP/1.0': (p) => (p.version = '1.0'),
  'no Host': (p) => (p.headers = p.headers.filter((h) => !/^host:/i.test(h))),
  Upgrade: (p) => (p.headers.push('Connection: Upgrade', 'Upgrade: websocket'), (p.fixedConnection = true)),
  'an obs-fold': withHeader('X-Folded: a', ' b'),
  'LF line ends': (p) => (p.eol = '\n'),
  'a space before the colon': (p) => (p.headers = p.headers.map((h) => h.replace(/^host:/i, 'Host :'))),
  'a head over 16 KiB': (p, dice) => p.headers.push(`X-Pad: ${filler(dice.int(16_400, 20_000))}`),
};

/**
 * Whether Node's server ends the connection before the stream's last request: at a form it reads no
 * more after, at garbage, or at bytes after a `Connection: close`. What it sends before ending it is
 * then a matter of timing (./http-differences.ts says how the comparison takes it).
 */
export function endsEarly(requests: readonly Request[]): boolean {
  return requests.some(
    ({ form }, i) =>
      form === 'garbage' ||
      Object.keys(FINAL_FORMS).some((final) => form.startsWith(final)) ||
      (form.endsWith(', close') && i < requests.length - 1),
  );
}

/** Bytes that are no request at all: Node answers 400 and closes. */
const GARBAGE = [
  'garbage\r\n\r\n',
  'GET\r\n\r\n',
  '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03',
  'GET / HTTP/1.1\r\nHost: x\r\n\0\r\n\r\n',
  ' GET /api/v1/users/alice HTTP/1.1\r\n\r\n',
];

/**
 * One request: a plain one, or (with chance `nodeRate`) one changed into a form the quick path
 * leaves to Node's server, most of them forms Node goes on reading after.
 */
function drawRequest(dice: Dice, corpus: Corpus, close: boolean, nodeRate: number): Request {
  const parts = plainParts(dice, corpus);
  let form = `${parts.method} plain`;
  if (dice.chance(nodeRate)) {
    const forms = dice.chance(0.8) ? ANSWERED_FORMS : FINAL_FORMS;
    if (forms === FINAL_FORMS && dice.chance(0.15)) return { form: 'garbage', text: dice.pick(GARBAGE) };
    form = dice.pick(Object.keys(forms));
    forms[form]!(parts, dice);
  }
  if (close && !parts.fixedConnection) parts.headers.push(connectionLine(dice, 'close'));
  return { form: close ? `${form}, close` : form, text: render(parts) };
}

/** A plain GET, closing the connection if asked: the end of a stream whose last form cannot carry the close. */
export function plainGet(target: string, close = false): Request {
  return {
    form: close ? 'GET plain, close' : 'GET plain',
    text: `GET ${target} HTTP/1.1\r\nHost: origin.test\r\n${close ? 'Connection: close\r\n' : ''}\r\n`,
  };
}

// ---- Streams --------------------------------------------------------------------------------------

/** How a stream ends: the server closes after a `Connection: close`, the client half-closes, or it stays open. */
type Ending = 'close' | 'half-close' | 'open';

/**
 * A pipeline of `count` requests; now and then one asks to close in the middle (bytes follow it).
 * Some pipelines are all plain, some mostly Node's: the quick path answers long runs, and hands
 * over early or late.
 */
function drawPipeline(dice: Dice, corpus: Corpus, count: number, ending: Ending): Request[] {
  const nodeRate = dice.pick([0, 0.05, 0.15, 0.4]);
  const requests: Request[] = [];
  for (let i = 0; i < count; i++) {
    const last = i === count - 1;
    requests.push(drawRequest(dice, corpus, last ? ending === 'close' : dice.chance(0.02), nodeRate));
  }
  const last = requests.at(-1)!;
  if (ending === 'close' && !last.form.endsWith('close')) requests.push(plainGet(`/api/v1/users/${dice.pick(corpus.names)}`, true));
  return requests;
}

const drawEnding = (dice: Dice): Ending =>
  dice.weighted([
    [55, 'close'],
    [30, 'half-close'],
    [15, 'open'],
  ]);

const drawCount = (dice: Dice): number =>
  dice.weighted<() => number>([
    [25, () => 1],
    [40, () => dice.int(2, 4)],
    [25, () => dice.int(5, 12)],
    [10, () => dice.int(13, 60)],
  ])();

/**
 * For a client that reads late: mostly enough GETs of the largest document the quick path answers
 * that their answers (megabytes) fill the socket buffers, so the server must stop reading until the
 * client reads, then go on; now and then a few, so that they do not.
 */
function drawBulk(dice: Dice, corpus: Corpus): Request[] {
  const [target, count] = dice.weighted<() => [string, number]>([
    [65, () => [OPENAPI, dice.int(60, 200)]],
    [10, () => [`/api/v1/users/${dice.pick(corpus.names)}`, dice.int(1500, 3500)]],
    [25, () => [OPENAPI, dice.int(0, 5)]],
  ])();
  return Array.from({ length: count }, () => plainGet(target));
}

// ---- Plans ----------------------------------------------------------------------------------------

/** `k` distinct cut points inside a stream of `length` bytes, ascending. */
function drawCuts(dice: Dice, length: number, k: number): number[] {
  const cuts = new Set<number>();
  for (let tries = 0; cuts.size < Math.min(k, length - 1) && tries < 10 * k; tries++) cuts.add(dice.int(1, length - 1));
  return [...cuts].sort((a, b) => a - b);
}

/** Cuts at request boundaries, now and then: whole heads in each write are what a quick connection reads best. */
function boundaryCuts(dice: Dice, requests: readonly Request[], k: number): number[] {
  const ends: number[] = [];
  let offset = 0;
  for (const request of requests.slice(0, -1)) ends.push((offset += request.text.length));
  return [...new Set(Array.from({ length: Math.min(k, ends.length) }, () => dice.pick(ends)))].sort((a, b) => a - b);
}

/** Some cuts: at request boundaries now and then (whole heads in each write), else anywhere. */
function drawSomeCuts(dice: Dice, requests: readonly Request[], k: number, atBoundaries: number): number[] {
  return dice.chance(atBoundaries) ? boundaryCuts(dice, requests, k) : drawCuts(dice, streamBytes(requests).length, k);
}

/** A generated case of a kind other than every-split (those are drawn a stream at a time). */
function drawCase(kind: Exclude<PlanKind, 'every-split'>, id: string, dice: Dice, corpus: Corpus): HttpCase {
  const ending = drawEnding(dice);
  const plan = (cuts: number[], readLateMs = 0): Plan => ({ kind, cuts, readLateMs, halfClose: ending === 'half-close' });
  switch (kind) {
    case 'whole':
      return { id, requests: drawPipeline(dice, corpus, drawCount(dice), ending), plan: plan([]) };
    case 'random-splits': {
      const requests = drawPipeline(dice, corpus, drawCount(dice), ending);
      const k = dice.int(1, Math.min(8, streamBytes(requests).length - 1));
      return { id, requests, plan: plan(drawSomeCuts(dice, requests, k, 0.3)) };
    }
    case 'late-reader': {
      const requests = [...drawBulk(dice, corpus), ...drawPipeline(dice, corpus, dice.int(1, 6), ending)];
      return { id, requests, plan: plan(drawSomeCuts(dice, requests, dice.int(0, 3), 0.5), dice.int(5, 100)) };
    }
  }
}

/** A short stream (one or two requests), to be cut at each of its byte boundaries in turn. */
function drawShortStream(dice: Dice, corpus: Corpus): { requests: Request[]; halfClose: boolean } {
  for (;;) {
    const ending = drawEnding(dice);
    const requests = drawPipeline(dice, corpus, dice.int(1, 2), ending);
    if (streamBytes(requests).length <= 400) return { requests, halfClose: ending === 'half-close' };
  }
}

// ---- Cases ----------------------------------------------------------------------------------------

/** How the cases of a run are shared among the plan kinds. */
const SHARES: Record<PlanKind, number> = { whole: 0.35, 'every-split': 0.25, 'random-splits': 0.32, 'late-reader': 0.08 };

/** The `total` cases of a run, by plan kind. */
export function drawCases(seed: number, total: number, corpus: Corpus): Map<PlanKind, HttpCase[]> {
  const byKind = new Map<PlanKind, HttpCase[]>();
  for (const kind of Object.keys(SHARES) as PlanKind[]) {
    const count = Math.max(1, Math.round(total * SHARES[kind]));
    byKind.set(kind, kind === 'every-split' ? everySplitCases(seed, count, corpus) : otherCases(seed, kind, count, corpus));
  }
  return byKind;
}

function otherCases(seed: number, kind: Exclude<PlanKind, 'every-split'>, count: number, corpus: Corpus): HttpCase[] {
  return Array.from({ length: count }, (_, n) => drawCase(kind, `${kind}/${n}`, new Dice(caseSeed(seed, `${kind}/${n}`)), corpus));
}

/** Short streams, each cut in two at every byte boundary in turn, until there are `count` cases. */
function everySplitCases(seed: number, count: number, corpus: Corpus): HttpCase[] {
  const cases: HttpCase[] = [];
  for (let n = 0; cases.length < count; n++) {
    const { requests, halfClose } = drawShortStream(new Dice(caseSeed(seed, `every-split/${n}`)), corpus);
    const length = streamBytes(requests).length;
    for (let cut = 1; cut < length && cases.length < count; cut++) {
      cases.push({ id: `every-split/${n}@${cut}`, requests, plan: { kind: 'every-split', cuts: [cut], readLateMs: 0, halfClose } });
    }
  }
  return cases;
}

/** The case with this id, drawn again (a replay). */
export function caseById(seed: number, id: string, corpus: Corpus): HttpCase {
  const match = /^(whole|random-splits|late-reader|every-split)\/(\d+)(?:@(\d+))?$/.exec(id);
  if (!match) throw new Error(`not a case id: ${id}`);
  const [, kind, n, cut] = match;
  if (kind !== 'every-split') return drawCase(kind as Exclude<PlanKind, 'every-split'>, id, new Dice(caseSeed(seed, id)), corpus);
  const { requests, halfClose } = drawShortStream(new Dice(caseSeed(seed, `every-split/${n}`)), corpus);
  return { id, requests, plan: { kind: 'every-split', cuts: [Number(cut)], readLateMs: 0, halfClose } };
}

/** The case without its requests [from, to): the plan's cuts among them dropped, those after them moved back. */
export function withoutRequests(httpCase: HttpCase, from: number, to: number): HttpCase {
  const start = streamBytes(httpCase.requests.slice(0, from)).length;
  const removed = streamBytes(httpCase.requests.slice(from, to)).length;
  const requests = [...httpCase.requests.slice(0, from), ...httpCase.requests.slice(to)];
  const length = streamBytes(requests).length;
  const cuts = httpCase.plan.cuts.flatMap((cut) => (cut <= start ? [cut] : cut >= start + removed ? [cut - removed] : []));
  return { ...httpCase, requests, plan: { ...httpCase.plan, cuts: [...new Set(cuts)].filter((cut) => cut > 0 && cut < length) } };
}

/** A case as JSON, whole (`{"stream": ..., "plan": ...}`): what a report prints to replay a shrunk case. */
export const caseToJson = (httpCase: HttpCase): string =>
  JSON.stringify({ stream: streamBytes(httpCase.requests).toString('latin1'), plan: httpCase.plan });

export function caseFromJson(json: string): HttpCase {
  const { stream, plan } = JSON.parse(json) as { stream: string; plan: Plan };
  return { id: 'given', requests: [{ form: 'given', text: stream }], plan };
}

/** The forms of a stream, runs of one form counted: `GET plain ×120; OPTIONS; GET plain, close`. */
export function describeForms(requests: readonly Request[]): string {
  const runs: [string, number][] = [];
  for (const { form } of requests) {
    const last = runs.at(-1);
    if (last?.[0] === form) last[1]++;
    else runs.push([form, 1]);
  }
  return runs.map(([form, n]) => (n > 1 ? `${form} ×${n}` : form)).join('; ');
}
