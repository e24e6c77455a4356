/** Where the tests find the repository and the CLI they run. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** The real bin, over the compiled build/. */
export const BIN = join(REPO, 'bin/profile-snapshot.js');
