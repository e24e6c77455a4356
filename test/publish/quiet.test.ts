/**
 * The quiet check (src/publish/record/quiet.ts): a publish of the tree the bucket already holds reads the
 * manifest's header and the first bytes of the record, nothing more; anything that leaves a doubt
 * (another tree, an unresolved intent, an older state, claims pending in the manifest) goes the full
 * way. Against s3rver, and moto_server when installed (both honour ranged GETs).
 */
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MANIFEST_FILE } from '../../src/core/layout.js';
import { readManifest, readManifestDigest, writeClaims } from '../../src/output/manifest.js';
import { parseState, parseStateHead, serializeIntent, serializeState } from '../../src/publish/record/format.js';
import { makeStore } from '../faults/helpers.js';
import { buildTo } from '../helpers/build.js';
import { clientFor, hasMoto, startMoto, startS3rver, type S3Server } from '../helpers/s3.js';
import { expectExact, newSite, PREFIX, publishSite, s3Workspace, sql, totalRequests, type Site } from './helpers.js';
import { tableOf } from '../../src/publish/plan/profile-table.js';

const servers: [string, () => Promise<S3Server>][] = [['s3rver', startS3rver]];
if (hasMoto) servers.push(['moto', startMoto]);

const STATE_KEY = `${PREFIX}/.profile-snapshot/remote-state`;
const INTENT_KEY = `${PREFIX}/.profile-snapshot/remote-intent`;

async function readRecordObject(site: Site, key: string): Promise<Buffer> {
  const client = clientFor(site.endpoint);
  try {
    const object = await client.send(new GetObjectCommand({ Bucket: site.bucket, Key: key }));
    return Buffer.from(await object.Body!.transformToByteArray());
  } finally {
    client.destroy();
  }
}

async function writeRecordObject(site: Site, key: string, body: Buffer): Promise<void> {
  const client = clientFor(site.endpoint);
  try {
    await client.send(new PutObjectCommand({ Bucket: site.bucket, Key: key, Body: body }));
  } finally {
    client.destroy();
  }
}

describe('the manifest digest', () => {
  it('is the SHA-256 of every byte after the digest line, voided by appended claims, back on the next build', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ps-digest-'));
    try {
      const db = join(dir, 'profiles.db');
      makeStore(db, 20);
      const out = join(dir, 'dist');
      buildTo(db, out);
      const bytes = readFileSync(join(out, MANIFEST_FILE));
      const second = bytes.indexOf('\n', bytes.indexOf('\n') + 1);
      const digest = readManifestDigest(out);
      expect(digest).toBe(
        createHash('sha256')
          .update(bytes.subarray(second + 1))
          .digest('hex'),
      );
      expect(readManifest(out).digest).toBe(digest);
      // A commit's claims appended: the digest no longer describes the file.
      writeClaims(out, { profiles: ['user1'], files: [] });
      expect(readManifestDigest(out)).toBeUndefined();
      expect(readManifest(out).digest).toBeUndefined();
      buildTo(db, out);
      expect(readManifestDigest(out)).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(servers)('a quiet publish to %s', (_name, start) => {
  const workspace = s3Workspace(start, 'ps-quiet-');

  it('reads two headers only, and the state names the tree it was made from', async () => {
    const site = await newSite(workspace.server, workspace.dir, 30);
    await publishSite(site);
    const state = await readRecordObject(site, STATE_KEY);
    const head = parseStateHead(state)!;
    expect(head.tree).toBe(readManifestDigest(site.out));
    expect([head.profiles, head.files]).toEqual([parseState(state).live.profiles.size, parseState(state).live.files.size]);

    // The entries under the header are not read: a state whose header names this tree but whose
    // entries say nothing is still taken at its header's word.
    await writeRecordObject(site, STATE_KEY, serializeState(head.id, [], [], head));
    const quiet = await publishSite(site);
    expect(quiet.changed).toBe(false);
    expect(quiet.compared).toBe('state');
    expect(quiet.objects).toEqual({ put: 0, deleted: 0, unchanged: 30 * 2 + 7 });
    expect(quiet.requests).toMatchObject({ GET: 2, PUT: 0, LIST: 0 });
    expect(totalRequests(quiet)).toBe(2);
  });

  it('goes the full way for another tree, and records the new one', async () => {
    const site = await newSite(workspace.server, workspace.dir, 30);
    await publishSite(site);
    sql(site.db, 'UPDATE users SET views = views + 7 WHERE id IN (2, 5)');
    buildTo(site.db, site.out);
    const changed = await publishSite(site);
    expect(changed.profiles.put).toBe(2);
    expect(parseStateHead(await readRecordObject(site, STATE_KEY))!.tree).toBe(readManifestDigest(site.out));
    await expectExact(site);
  });

  it('goes the full way when an intent is unresolved, and redoes what it names', async () => {
    const site = await newSite(workspace.server, workspace.dir, 30);
    await publishSite(site);
    const head = parseStateHead(await readRecordObject(site, STATE_KEY))!;
    const name = [...tableOf(parseState(await readRecordObject(site, STATE_KEY)).live.profiles).keys()][0]!;
    // A publish that stopped half-way over this state: it may have changed `name`'s objects.
    await writeRecordObject(
      site,
      INTENT_KEY,
      serializeIntent({ id: 'killed', base: head.id, profiles: new Set([name]), files: new Set(), strays: new Set() }),
    );
    const report = await publishSite(site);
    expect(report.profiles.put).toBe(1);
    expect(report.requests.PUT).toBeGreaterThan(2);
    await expectExact(site);
    expect(totalRequests(await publishSite(site))).toBe(2);
  });

  it("reads an older version's state in full, and records the tree's digest once for next time", async () => {
    const site = await newSite(workspace.server, workspace.dir, 30);
    await publishSite(site);
    const parsed = parseState(await readRecordObject(site, STATE_KEY));
    // As a version without digests wrote it: the header has the id only.
    await writeRecordObject(site, STATE_KEY, serializeState(parsed.id, parsed.live.profiles, parsed.live.files));
    const upgrade = await publishSite(site);
    expect(upgrade.changed).toBe(false);
    expect(upgrade.objects.put).toBe(0);
    expect(parseStateHead(await readRecordObject(site, STATE_KEY))!.tree).toBe(readManifestDigest(site.out));
    const quiet = await publishSite(site);
    expect(totalRequests(quiet)).toBe(2);
    await expectExact(site);
  });
});
