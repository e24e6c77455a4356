/** The library behind the CLI. */
export { build, type BuildOptions, type BuildReport } from './build.js';
export { normalizeBaseUrl, snapshotTime } from './config.js';
export { ExitCode, SnapshotError, StrictWarningsError } from './errors.js';
export { renderUser, isPublishableUsername, type User, type RowWarning } from './render/user.js';
export { ERRORS, successDocument, errorDocument, meta } from './render/documents.js';
export { ProfileStore } from './store/read.js';
export { CONTRACT_SCHEMA } from './store/schema.js';
export * as layout from './publish/layout.js';
