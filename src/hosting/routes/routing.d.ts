// The types of ./routing.js (plain JavaScript, embedded as written into the hosts that run code).
import type { ErrorCode } from '../../render/documents.js';
import type { QueryValues, Resolution, RouteTable } from './routes.js';

export declare function under(path: string, prefix: string): boolean;
export declare function profile(dir: string, requested: string): Resolution;
export declare function resolveRoute(path: string, query: QueryValues, table?: RouteTable): Resolution;
export declare function errorAnswerBody(code: ErrorCode, isoTimestamp: string): string;
export declare function acceptsGzip(header: string | null | undefined): boolean;
export declare function matchesIfNoneMatch(header: string | null | undefined, etag: string): boolean;
