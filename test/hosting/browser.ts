/**
 * A real headless Chromium for the browser tests, from the npm registry: `@sparticuz/chromium` ships
 * a Chromium binary inside its package, so `npm ci` is all a machine needs. CHROMIUM_PATH chooses
 * another browser instead (Debian's /usr/bin/chromium, say). Nothing ever downloads a browser, and a
 * browser that cannot start fails the test with the way to fix it: it never skips.
 */
import sparticuz from '@sparticuz/chromium';
import { existsSync } from 'node:fs';
import { chromium, type BrowserContext } from 'playwright-core';

/** A closed network, as root: no background connections, and no sandbox (it needs a user namespace). */
const QUIET_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * The packaged browser's recommended flags turn off what these tests must prove: the same-origin
 * policy (CORS would never block anything) and site isolation. They are dropped.
 */
const WEAKENING_ARGS = new Set(['--disable-web-security', '--allow-running-insecure-content', '--disable-site-isolation-trials']);

interface Browser {
  executablePath: string;
  args: string[];
  /** Where the browser came from, and how to fix it when it does not start. */
  origin: string;
  fix: string;
}

async function chooseBrowser(env: NodeJS.ProcessEnv): Promise<Browser> {
  const chosen = env.CHROMIUM_PATH;
  if (chosen !== undefined && chosen !== '') {
    if (!existsSync(chosen))
      throw new Error(
        `CHROMIUM_PATH names ${chosen}, which does not exist: point it at a Chromium binary, or unset it to use the one @sparticuz/chromium ships`,
      );
    return {
      executablePath: chosen,
      args: ['--headless', ...QUIET_ARGS],
      origin: `CHROMIUM_PATH (${chosen})`,
      fix: 'point CHROMIUM_PATH at a working Chromium, or unset it to use the one @sparticuz/chromium ships',
    };
  }
  let executablePath: string;
  try {
    // Unpacks the binary into the temp folder once (a few seconds), then reuses it.
    executablePath = await sparticuz.executablePath();
  } catch (cause) {
    throw new Error(
      'cannot unpack the Chromium of @sparticuz/chromium: run npm ci (it installs it), or set CHROMIUM_PATH to a Chromium binary',
      { cause },
    );
  }
  const args = sparticuz.args.filter((arg) => !WEAKENING_ARGS.has(arg));
  return {
    executablePath,
    args: [...args, ...QUIET_ARGS],
    origin: `@sparticuz/chromium (${executablePath})`,
    fix: `remove ${executablePath} (a copy unpacked by another version, or cut short; it is unpacked again), run npm ci, or set CHROMIUM_PATH to a working Chromium`,
  };
}

/** A persistent browser context in `profileDir`; throws, saying how to fix it, when none can start. */
export async function launchBrowser(profileDir: string, env: NodeJS.ProcessEnv = process.env): Promise<BrowserContext> {
  const browser = await chooseBrowser(env);
  try {
    return await chromium.launchPersistentContext(profileDir, {
      executablePath: browser.executablePath,
      args: browser.args,
      headless: true,
    });
  } catch (cause) {
    throw new Error(`the browser from ${browser.origin} did not start: ${browser.fix}. This test never skips.`, { cause });
  }
}
