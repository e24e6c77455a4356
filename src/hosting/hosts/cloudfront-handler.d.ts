// The types of ./cloudfront-handler.js (plain JavaScript, embedded as written into aws/viewer-request.js).
import type { CloudFrontEvent, CloudFrontRequest, CloudFrontResponse } from './cloudfront-function.js';
import type { QueryValues } from '../routes/routes.js';

/** The function CloudFront calls (the name is CloudFront's convention). */
export declare function handler(event: CloudFrontEvent): CloudFrontRequest | CloudFrontResponse;
/** The query as URLSearchParams reads it. */
export declare function cloudFrontQuery(request: CloudFrontRequest): QueryValues;
