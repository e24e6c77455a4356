/**
 * An address to listen on, as given on the command line: `port`, `host:port` or `[ipv6]:port`.
 * Checked here, before anything starts, so a typo is a usage error (exit 2) naming the option.
 */
import { usageError } from '../core/errors.js';

export interface ListenAddress {
  host: string;
  port: number;
}

/** `text` as a host and port; the host is `defaultHost` when only a port is given. Port 0: any free one. */
export function listenAddress(text: string, option: string, defaultHost: string): ListenAddress {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]:|([^\s:/[\]]+):)?(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65535) {
    throw usageError(`${option} must be [host:]port (a port from 0 to 65535, e.g. 9464 or 0.0.0.0:9464), not ${JSON.stringify(text)}`);
  }
  return { host: match[1] ?? match[2] ?? defaultHost, port };
}
