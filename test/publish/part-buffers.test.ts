/**
 * A publish lets go of the part buffers of its multipart uploads once its uploads are done, before
 * it deletes and writes the state (publish.ts, collection point 'sent'): a watcher's publish thread
 * would otherwise hold them to the publish's end. Its client's close lets go of them too, so the
 * test tells the two apart by their order.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Remote } from '../../src/publish/bucket/client.js';
import { startS3rver } from '../helpers/s3.js';
import { newSite, publishSite, s3Workspace } from './helpers.js';

describe('a publish and its part buffers', () => {
  const workspace = s3Workspace(startS3rver, 'ps-part-buffers-');
  afterEach(() => vi.restoreAllMocks());

  it('lets go of them once its uploads are done, before its client closes', async () => {
    const site = await newSite(workspace.server, workspace.dir, 30);
    const letGo = vi.spyOn(Remote.prototype, 'letGoOfPartBuffers');
    const close = vi.spyOn(Remote.prototype, 'close');
    const report = await publishSite(site);
    expect(report.objects.put).toBeGreaterThan(0);
    expect(close).toHaveBeenCalled();
    expect(letGo.mock.invocationCallOrder[0]!).toBeLessThan(close.mock.invocationCallOrder[0]!);
  });
});
