/**
 * The CLI's memory upkeep (core/memory.ts), on by default. PROFILE_SNAPSHOT_MEMORY_UPKEEP is the
 * memory benchmark's handle: `off`, or a comma-separated list of parts to leave out, each named with
 * a leading `-` (`-young-generation`, `-release-freed`, `-map-large`, or a collection point such as `-rows`).
 */
import { COLLECTION_POINTS, enableMemoryUpkeep, type CollectionPoint } from '../core/memory.js';
import { usageError } from '../core/errors.js';

export const MEMORY_UPKEEP_ENV = 'PROFILE_SNAPSHOT_MEMORY_UPKEEP';

export function applyMemoryUpkeep(env: NodeJS.ProcessEnv): void {
  const setting = env[MEMORY_UPKEEP_ENV]?.trim() ?? '';
  if (setting === 'off') return;
  const parts = setting === '' ? [] : setting.split(',').map((part) => part.trim());
  const known = ['young-generation', 'release-freed', 'map-large', ...COLLECTION_POINTS];
  for (const part of parts) {
    if (!part.startsWith('-') || !known.includes(part.slice(1))) {
      throw usageError(
        `${MEMORY_UPKEEP_ENV} has an unknown part ${JSON.stringify(part)}`,
        `use "off", or parts to leave out from: ${known.map((name) => `-${name}`).join(', ')}`,
      );
    }
  }
  const left = new Set(parts.map((part) => part.slice(1)));
  enableMemoryUpkeep({
    youngGeneration: !left.has('young-generation'),
    releaseFreed: !left.has('release-freed'),
    mapLarge: !left.has('map-large'),
    skip: COLLECTION_POINTS.filter((point: CollectionPoint) => left.has(point)),
  });
}
