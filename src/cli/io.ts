/** What a command may touch of the process: its streams and environment (injected, for tests). */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

/** Set by a command before it can fail, so the exit point knows how to report the failure. */
export interface CliState {
  json: boolean;
}
