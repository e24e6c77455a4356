/**
 * The library behind the CLI: every command is a thin wrapper over one of these. Importing this
 * module loads all of them; the CLI loads only the one it runs.
 */
export { build, type BuildReport } from './build.js';
export { BUILD_DEFAULTS, resolveBuildOptions, type BuildOptions, type BuildRun, type ResolvedBuildOptions } from './build-options.js';
/** The CLI's memory upkeep (V8 flags, timely collections), for a host that wants the CLI's memory profile. */
export { enableMemoryUpkeep } from './core/memory.js';
export { normalizeBaseUrl, snapshotTime } from './core/config.js';
export { ExitCode, SnapshotError, StrictWarningsError } from './core/errors.js';
export { renderUser, isPublishableUsername, type User, type RowWarning } from './render/user.js';
export { ERRORS, successDocument, errorDocument, meta } from './render/documents.js';
export { ProfileStore } from './store/read.js';
export { CONTRACT_SCHEMA } from './store/schema.js';
export * as layout from './core/layout.js';
export { OutDirLock } from './output/lock.js';
export { Watcher, type WatchOptions, type WatchEvent } from './watch/loop.js';
export { regenerate } from './watch/regenerate.js';
export { createOrigin, listen, closeGracefully, type OriginOptions } from './hosting/serve/origin.js';
export { ROUTES, CONTRACT_HEADERS } from './hosting/routes/routes.js';
export { resolveRoute } from './hosting/routes/routing.js';
export { renderNetlifyFiles, renderNetlifyToml } from './hosting/hosts/netlify-config.js';
export { renderCloudflareFiles, type CloudflareOptions } from './hosting/hosts/cloudflare-config.js';
export { renderAwsFiles } from './hosting/hosts/aws-config.js';
export { verify, type VerifyOptions, type VerifyReport } from './verify/index.js';
export { seedStore, type SeedOptions, type SeedReport } from './seed/synthetic.js';
