/**
 * One worker of a `serve` with several workers (./cluster.ts forks them): the same origin
 * server as a single process, on the listening socket the cluster shares. It tells the primary when
 * it listens or why it cannot, reports its answer totals when asked to count them, and drains (the
 * requests in flight finish) on the primary's word or on SIGTERM/SIGINT, which a service manager or a
 * terminal sends to every process of the server at once.
 */
import { reportOf } from '../../core/errors.js';
import { closeGracefully, createOrigin, listenOrRefuse } from './origin.js';
import type { OriginServer } from './origin-server.js';
import { countInto, noAnswers, type AnswerTotals, type PrimaryMessage, type WorkerMessage, type WorkerSetup } from './messages.js';

/** How often a counting worker reports its totals. */
const TALLY_EVERY_MS = 1000;

const tell = (message: WorkerMessage, then?: () => void) => {
  if (process.connected) process.send!(message, undefined, {}, () => then?.());
  else then?.();
};

/**
 * The origin server a process of `serve` runs for `setup` (a worker, or the single process), and the
 * totals it counts its answers into when `setup` asks for them.
 */
export function originFor(setup: WorkerSetup, log: (line: string) => void): { server: OriginServer; totals: AnswerTotals } {
  const totals = noAnswers();
  const { server } = createOrigin({
    out: setup.out,
    cacheBytes: setup.cacheBytes,
    log: setup.verbose ? log : undefined,
    count: setup.tally ? countInto(totals) : undefined,
  });
  return { server, totals };
}

/** Serves until told to stop, then drains and lets the process end. */
export async function runWorker(setup: WorkerSetup, log: (line: string) => void): Promise<void> {
  let server;
  let totals;
  let address;
  try {
    ({ server, totals } = originFor(setup, log));
    address = await listenOrRefuse(server, setup.port, setup.host);
  } catch (error) {
    const { kind, message, hint } = reportOf(error);
    tell({ type: 'failed', report: { kind, message, hint } }, leavePrimary);
    return;
  }
  const reporting = setup.tally ? setInterval(() => tell({ type: 'tally', totals }), TALLY_EVERY_MS) : undefined;
  tell({ type: 'listening', address });
  await new Promise<void>((resolveStop) => {
    process.on('message', (message: PrimaryMessage) => message.type === 'stop' && resolveStop());
    process.once('SIGTERM', resolveStop);
    process.once('SIGINT', resolveStop);
    // The primary is gone (killed): nobody would ever tell this worker to stop.
    process.once('disconnect', resolveStop);
  });
  await closeGracefully(server);
  clearInterval(reporting);
  if (setup.tally) tell({ type: 'tally', totals }, leavePrimary);
  else leavePrimary();
}

/** Closes the channel to the primary while it is open (a process started without IPC has no disconnect). */
function leavePrimary(): void {
  if (process.connected) process.disconnect?.();
}
