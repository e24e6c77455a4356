/**
 * The AWS SDK is loaded only by what talks to a bucket: a watcher without --publish, a build and
 * `serve` start without it (publish/report.ts and the CLI's summaries name the publish report's
 * types without loading it). Counted by a module hook in the real CLI process.
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/process.js';

/** Prints how many modules of the AWS SDK the process loaded, as it exits. */
const COUNT_SDK_MODULES =
  'data:text/javascript,import{registerHooks}from"node:module";let n=0;' +
  'registerHooks({load(url,context,next){if(url.includes("/@aws-sdk/"))n++;return next(url,context)}});' +
  'process.on("exit",()=>process.stderr.write(`aws-sdk modules: ${n}\\n`))';

const sdkModules = (args: string[]) => {
  const run = runCli(args, { nodeArgs: ['--import', COUNT_SDK_MODULES] });
  expect(run.code, run.stderr).toBe(0);
  return Number(/aws-sdk modules: (\d+)/.exec(run.stderr)?.[1]);
};

describe('the AWS SDK is loaded only to talk to a bucket', () => {
  it('is not loaded by watch, build or serve as they start', () => {
    for (const command of ['watch', 'build', 'serve']) expect(sdkModules([command, '--help']), command).toBe(0);
  });

  it('is loaded by publish (the count above can see it)', () => {
    expect(sdkModules(['publish', '--help'])).toBeGreaterThan(0);
  });
});
