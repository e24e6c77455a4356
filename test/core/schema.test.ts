/**
 * Every document the build writes matches the contract's JSON Schemas (contract/openapi.json), and
 * the schemas themselves reject documents that break the contract.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTo } from '../helpers/build.js';
import { publishedFiles } from '../helpers/output.js';
import { validateTree, validator } from '../helpers/schemas.js';
import { tempDir, TestStore } from '../helpers/store.js';

let dir: ReturnType<typeof tempDir>;
let out: string;
beforeAll(() => {
  dir = tempDir();
  const db = join(dir.path, 'sample.db');
  TestStore.sample(db).close();
  out = join(dir.path, 'dist');
  buildTo(db, out, { reproducible: false });
});
afterAll(() => dir.cleanup());

describe('contract schemas', () => {
  it('validate every file built from the sample store', () => {
    expect(publishedFiles(out)).toHaveLength(43); // 18 profiles x 2 aliases, creators list and its gzip variant, 4 error documents, contract
    expect(validateTree(out)).toEqual([]);
  });

  it('reject documents that break the contract', () => {
    const profile = JSON.parse(readFileSync(join(out, 'api/v1/users/alice'), 'utf8'));
    const check = validator('ProfileResponse');
    const broken = (mutate: (doc: any) => void) => {
      const doc = structuredClone(profile);
      mutate(doc);
      return check(doc);
    };
    expect(broken(() => {})).toBe(true);
    expect(
      broken((d) => {
        d.data.email = 'x@y.z';
      }),
    ).toBe(false);
    expect(
      broken((d) => {
        d.data.status = 'banned';
      }),
    ).toBe(false);
    expect(
      broken((d) => {
        d.data.banInfo.isBanned = true;
      }),
    ).toBe(false);
    expect(
      broken((d) => {
        d.data.createdAt = '2021-03-01T12:00:00Z';
      }),
    ).toBe(false);
    expect(
      broken((d) => {
        d.data.badges.list = ['vip'];
      }),
    ).toBe(false);
    expect(
      broken((d) => {
        d.data.hasCustomDomain = false;
      }),
    ).toBe(false);
    expect(
      broken((d) => {
        delete d.data.avatarDecoration;
      }),
    ).toBe(false);
    expect(
      broken((d) => {
        d.meta.version = 'v2';
      }),
    ).toBe(false);
    expect(
      broken((d) => {
        d.data.socials[0].url = 'javascript:alert(1)';
      }),
    ).toBe(false);
    const list = JSON.parse(readFileSync(join(out, 'service-api/v1/creators'), 'utf8'));
    list.data.push(JSON.parse(readFileSync(join(out, 'api/v1/users/dave_99'), 'utf8')).data);
    expect(validator('CreatorsResponse')(list)).toBe(false);
  });
});
