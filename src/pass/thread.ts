/**
 * A thread of a shared pass (see ./threads.ts): reads, renders and stages one share of the
 * users and hands it over. Loading is inside `runShare` too, so the owner is always told the thread
 * ended, even when it could not start.
 */
import { workerData } from 'node:worker_threads';
import { runShare } from './threads.js';

await runShare(workerData, async () => (await import('./pass.js')).stageShare);
