/**
 * A publish's options as its steps take them (publish.ts resolves them once per publish): the out
 * dir made absolute, and the publish's rounds of sending again later.
 */
import type { Later } from './bucket/later.js';
import type { PublishOptions } from './report.js';

export type Run = PublishOptions & { later: Later };
