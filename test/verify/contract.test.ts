/**
 * The contract document (contract/openapi.json): a valid OpenAPI 3.1 document by a maintained
 * validator; complete (both operations, the alias path, the query-string form, the contract headers
 * on every response, every error, OPTIONS); its examples are the sample store's real documents and
 * match the component schemas; and a typed client generates from it and type-checks.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import openapiTS, { astToString } from 'openapi-typescript';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderNetlifyToml } from '../../src/hosting/hosts/netlify-config.js';
import { closeGracefully, createOrigin, listen } from '../../src/hosting/serve/origin.js';
import { ROUTES } from '../../src/hosting/routes/routes.js';
import { resolveRoute } from '../../src/hosting/routes/routing.js';
import { ERRORS, type ErrorCode } from '../../src/render/documents.js';
import { errorFile } from '../../src/core/layout.js';
import { contractDocument, CONTRACT_PATH } from '../../src/core/contract.js';
import { validator } from '../../src/verify/schemas.js';
import { sampleTree, type Tree } from './fixture.js';

const doc = contractDocument() as any;
let tree: Tree;
beforeAll(() => {
  tree = sampleTree();
});
afterAll(() => tree?.cleanup());

/** Follows a local `$ref` (`#/components/...`). */
function deref(node: any): any {
  while (node && typeof node.$ref === 'string') {
    node = node.$ref
      .slice(2)
      .split('/')
      .reduce((at: any, key: string) => at[key], doc);
  }
  return node;
}
const operations = () =>
  Object.entries(doc.paths as Record<string, any>).flatMap(([path, item]) =>
    ['get', 'options'].filter((m) => item[m]).map((method) => ({ path, method, op: item[method], item })),
  );

describe('the OpenAPI document', () => {
  it('passes a maintained OpenAPI 3.1 validator (@seriousme/openapi-schema-validator)', async () => {
    const validatorOas = new Validator();
    const result = await validatorOas.validate(CONTRACT_PATH);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validatorOas.version).toBe('3.1');
  });

  it('describes both operations, the alias path and the query-string form, each with OPTIONS', () => {
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/api/v1/openapi.json',
      '/api/v1/users',
      '/api/v1/users/{username}',
      '/service-api/v1/creators',
      '/service-api/v1/users/{username}',
    ]);
    const ids = operations().map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining(['getProfile', 'getProfileAlias', 'getProfileByQuery', 'listCreators', 'getOpenApiDocument']),
    );
    for (const item of Object.values(doc.paths) as any[]) {
      expect(
        Object.keys(item)
          .filter((k) => k !== 'parameters')
          .sort(),
      ).toEqual(['get', 'options']);
      expect(Object.keys(item.options.responses)).toEqual(['204']);
    }
    const query = doc.paths['/api/v1/users'].get.parameters.map(deref);
    expect(query).toEqual([expect.objectContaining({ name: 'username', in: 'query', required: true })]);
    expect(Object.keys(doc.paths['/api/v1/users'].get.responses)).toEqual(['200', '400', '404']);
    for (const alias of ['/api/v1/users/{username}', '/service-api/v1/users/{username}']) {
      expect(doc.paths[alias].parameters.map(deref)).toEqual([expect.objectContaining({ name: 'username', in: 'path', required: true })]);
      expect(Object.keys(doc.paths[alias].get.responses)).toEqual(['200', '404']);
    }
    // The profile paths are the route table's aliases, and the list its plain file.
    expect(ROUTES.profiles.map((p) => `${p.path}/{username}`).every((p) => p in doc.paths)).toBe(true);
    expect(ROUTES.query.path in doc.paths).toBe(true);
    expect(ROUTES.files.map((f) => f.path).every((p) => p in doc.paths)).toBe(true);
  });

  it("puts the contract headers, with the route table's exact values, on every response", () => {
    for (const name of [
      'Content-Type',
      'Access-Control-Allow-Origin',
      'Access-Control-Allow-Methods',
      'Cache-Control',
      'X-Content-Type-Options',
    ]) {
      expect(deref(doc.components.headers[name]).schema.const, name).toBe(ROUTES.headers[name]);
    }
    expect(doc.components.headers['Cache-Control'].description).toMatch(/s-maxage=30.*stale-while-revalidate=60/s);
    const responses = [...operations().flatMap(({ op }) => Object.values(op.responses)), ...Object.values(doc.components.responses)].map(
      deref,
    );
    expect(responses.length).toBeGreaterThan(10);
    for (const response of responses) {
      expect(Object.keys(response.headers)).toEqual(
        expect.arrayContaining(['Content-Type', 'Access-Control-Allow-Origin', 'Access-Control-Allow-Methods', 'Cache-Control']),
      );
    }
  });

  it('documents every error with its status, code and body: the very documents build writes', () => {
    const byCode = new Map<string, any>();
    for (const response of Object.values(doc.components.responses) as any[]) {
      const media = response.content?.['application/json'];
      if (media?.schema?.$ref !== '#/components/schemas/ErrorResponse') continue;
      for (const example of Object.values(media.examples) as any[]) byCode.set(example.value.error.code, example.value);
    }
    expect([...byCode.keys()].sort()).toEqual(Object.keys(ERRORS).sort());
    for (const code of Object.keys(ERRORS) as ErrorCode[]) {
      expect(byCode.get(code)).toEqual(tree.json(errorFile(code)));
      expect(byCode.get(code).error.status).toBe(ERRORS[code].status);
    }
    const error = validator('Error');
    expect(error({ status: 404, code: 'USERNAME_REQUIRED', message: 'x' })).toBe(false);
    expect(error({ status: 400, code: 'USERNAME_REQUIRED', message: 'x' })).toBe(true);
  });

  it('takes its examples from the sample store, and each matches its schema', () => {
    const profile = deref(doc.components.responses.Profile).content['application/json'].examples;
    expect(profile.active.value).toEqual(tree.json('api/v1/users/alice'));
    expect(profile.suspended.value).toEqual(tree.json('api/v1/users/dave_99'));
    expect(profile.banned.value).toEqual(tree.json('api/v1/users/eve-banned'));
    const creators = deref(doc.components.responses.Creators).content['application/json'].examples.sample.value;
    const list = tree.json('service-api/v1/creators');
    expect(creators).toEqual({ ...list, data: list.data.slice(0, 2) });

    let checked = 0;
    for (const response of Object.values(doc.components.responses) as any[]) {
      const media = response.content?.['application/json'];
      const name = media?.schema?.$ref?.split('/').at(-1);
      if (!name) continue;
      for (const example of Object.values(media.examples ?? {}) as any[]) {
        const validate = validator(name);
        expect(validate(example.value), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBe(8);
  });

  it('is published by build at api/v1/openapi.json, byte for byte, and routed with the contract headers', () => {
    expect(tree.read('api/v1/openapi.json')).toBe(readFileSync(CONTRACT_PATH, 'utf8'));
    expect(resolveRoute('/api/v1/openapi.json', new URLSearchParams())).toEqual({ kind: 'file', file: 'api/v1/openapi.json' });
    // A static file under /api/v1/: netlify.toml's header rule for /api/v1/* gives it the contract headers.
    expect(renderNetlifyToml()).toContain('for = "/api/v1/*"');
  });

  it('is served by the origin server with the contract headers', async () => {
    const { server } = createOrigin({ out: tree.out });
    const { port } = await listen(server, 0, '127.0.0.1');
    try {
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/openapi.json`);
      expect(response.status).toBe(200);
      for (const [name, value] of Object.entries(ROUTES.headers)) expect(response.headers.get(name), name).toBe(value);
      expect(await response.text()).toBe(readFileSync(CONTRACT_PATH, 'utf8'));
    } finally {
      await closeGracefully(server, 1000);
    }
  });

  it('generates a typed client (openapi-typescript) that type-checks against the real documents', async () => {
    const types = astToString(await openapiTS(new URL(`file://${CONTRACT_PATH}`)));
    writeFileSync(join(tree.root, 'api.d.ts'), types);
    const alice = tree.read('api/v1/users/alice');
    const list = tree.read('service-api/v1/creators');
    const notFound = tree.read('_errors/user-not-found.json');
    writeFileSync(
      join(tree.root, 'client.ts'),
      `
      import type { paths, components } from './api';
      type Profile = paths['/api/v1/users/{username}']['get']['responses'][200]['content']['application/json'];
      type Alias = paths['/service-api/v1/users/{username}']['get']['responses'][200]['content']['application/json'];
      type ByQuery = paths['/api/v1/users']['get'];
      type Creators = paths['/service-api/v1/creators']['get']['responses'][200]['content']['application/json'];
      type NotFound = paths['/api/v1/users/{username}']['get']['responses'][404]['content']['application/json'];
      export const profile: Profile = ${alice};
      export const alias: Alias = profile;
      export const creators: Creators = ${list};
      export const notFound: NotFound = ${notFound};
      export const query: ByQuery['parameters']['query'] = { username: 'alice' };
      export const status: components['schemas']['User']['status'] = profile.data.status;
      // @ts-expect-error a status the contract does not have
      export const banned: components['schemas']['User']['status'] = 'banned';
      // @ts-expect-error the query-string form needs a username
      export const noQuery: ByQuery['parameters']['query'] = {};
    `,
    );
    const program = ts.createProgram([join(tree.root, 'client.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      skipLibCheck: false,
      types: [],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);
    expect(readFileSync(join(tree.root, 'api.d.ts'), 'utf8')).toContain('getProfileByQuery');
  }, 60_000);
});
