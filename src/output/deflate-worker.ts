/**
 * Worker thread deflating pieces of the creators list's gzip variant for the thread assembling it
 * (see ./deflate-pool.ts).
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { followMemoryUpkeep, type MemoryUpkeep } from '../core/memory.js';
import { serveBatches } from './deflate-pool.js';

// Again, for the whole process: this thread's start applied V8's default flags once more, which let
// every thread's young generation grow, the assembling thread's included.
const { port, memoryUpkeep } = workerData as { port: MessagePort; memoryUpkeep: MemoryUpkeep | undefined };
followMemoryUpkeep(memoryUpkeep);
serveBatches(port);
