/**
 * A thread of a shared pass (see ./threads.ts): reads, renders and stages one slice of the
 * users and hands it over. Loading is inside `runSlice` too, so the owner is always told the thread
 * ended, even when it could not start.
 */
import { workerData } from 'node:worker_threads';
import { runSlice } from './threads.js';

await runSlice(workerData, async () => (await import('./pass.js')).stageSlice);
