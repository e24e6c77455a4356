/**
 * The Node.js the CLI runs on, and the native modules it loads. A user who switched Node versions
 * after installing, or installed with `npm install -g` under one Node and runs under another, meets
 * Node's loader error for a module built for the other version: told here in one line, as what it
 * is, instead of as a bug with a stack.
 */

/** Node's ABI number (NODE_MODULE_VERSION) of each major release a user may still have around. */
const MAJOR_OF_ABI: Readonly<Record<number, number>> = {
  83: 14,
  93: 16,
  108: 18,
  115: 20,
  120: 21,
  127: 22,
  131: 23,
  137: 24,
  141: 25,
  147: 26,
};

/** What a failure to load a native module built for another Node says, and how to fix it. */
export interface NativeMismatch {
  message: string;
  hint: string;
}

/**
 * Recognises Node's "compiled against a different Node.js version" loader error (ERR_DLOPEN_FAILED
 * with two NODE_MODULE_VERSIONs): the module it names, the Node it was built for and this one.
 */
export function nativeMismatchOf(error: unknown): NativeMismatch | undefined {
  if (!(error instanceof Error) || (error as NodeJS.ErrnoException).code !== 'ERR_DLOPEN_FAILED') return undefined;
  const versions = /NODE_MODULE_VERSION (\d+)\.[\s\S]*?requires\s+NODE_MODULE_VERSION (\d+)/.exec(error.message);
  if (versions === null) return undefined;
  const builtFor = Number(versions[1]);
  const module = moduleNameOf(error.message);
  const builtNode = MAJOR_OF_ABI[builtFor] === undefined ? 'another Node.js' : `Node.js ${MAJOR_OF_ABI[builtFor]}`;
  return {
    message:
      `the native module ${module} was built for ${builtNode} (NODE_MODULE_VERSION ${builtFor}), ` +
      `but this is Node.js ${process.versions.node} (NODE_MODULE_VERSION ${versions[2]})`,
    hint:
      `rebuild it for this Node with \`npm rebuild ${module}\` in the folder that holds its node_modules/, ` +
      `or reinstall profile-snapshot under this Node (\`npm install -g profile-snapshot\`)`,
  };
}

/** The package a native module's path belongs to (the last node_modules/ segment, scoped or not). */
function moduleNameOf(message: string): string {
  const path = /'([^']+\.node)'/.exec(message)?.[1] ?? '';
  const names = [...path.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)/g)];
  return names.at(-1)?.[1] ?? (path === '' ? 'a native module' : path);
}
