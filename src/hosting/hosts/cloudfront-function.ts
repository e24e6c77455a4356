/**
 * The shapes of CloudFront's viewer-request event and response, and the reason phrases of the
 * statuses the CloudFront Function answers with. The function itself is ./cloudfront-handler.js.
 */

/** A query parameter or header as CloudFront passes it: the first value, and every value when repeated. */
export interface CloudFrontValue {
  value: string;
  multiValue?: { value: string }[];
}

/** The viewer request. `uri` and the query string's names and values arrive as the viewer sent them, still percent-encoded. */
export interface CloudFrontRequest {
  method: string;
  uri: string;
  querystring: Record<string, CloudFrontValue>;
  headers: Record<string, CloudFrontValue>;
  /** The query string as sent, without `?` (undefined with none); a helper method of cloudfront-js-2.0. */
  rawQueryString?: () => string | undefined;
}

export interface CloudFrontResponse {
  statusCode: number;
  statusDescription: string;
  headers: Record<string, { value: string }>;
  body?: { encoding: 'text'; data: string };
}

export interface CloudFrontEvent {
  request: CloudFrontRequest;
}

/** Reason phrases of the statuses the function answers with. */
export const STATUS_TEXT: Record<number, string> = { 204: 'No Content', 400: 'Bad Request', 404: 'Not Found', 405: 'Method Not Allowed' };
