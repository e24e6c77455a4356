/**
 * Renders the AWS side of the route table into `aws/`: the CloudFront Function (viewer request) of
 * ./cloudfront-handler.js with the table's data, the response headers policy (the contract's CORS
 * headers and nosniff on every answer), and a CloudFormation template that wires both, the custom
 * error responses and an Origin Access Control to a distribution in front of a private bucket. All
 * committed; `profile-snapshot aws config --check` fails when they differ from what this renders.
 *
 * AWS facts this relies on (docs.aws.amazon.com, CloudFront Developer Guide):
 *   - a viewer-request function sees `uri` and the query string as the viewer sent them (encoded);
 *     it cannot read the bucket, and its code is at most 10 KB;
 *   - a response headers policy's CORS settings answer only requests that carry `Origin`, so the
 *     contract's CORS headers are custom headers, which CloudFront adds to every response;
 *   - a response the function generates gets no custom error page, so the function sets every header
 *     of its own answers itself;
 *   - custom error responses belong to the whole distribution: S3 answers 403 for a missing key when
 *     the distribution may not list the bucket (404 when it may), and both become USER_NOT_FOUND.
 *     Only profiles and the table's documents ever reach the bucket, so nothing else is affected.
 */
import {
  CANONICAL_USERNAME,
  ERROR_BODIES,
  ALLOW_HEADER,
  OUTSIDE_BODY,
  OUTSIDE_HEADERS,
  PREFLIGHT_HEADERS,
  ROUTES,
  VARY_HEADER,
  type RouteTable,
} from '../routes/routes.js';
import { STATUS_TEXT } from './cloudfront-function.js';
import { generatedBanner, syncGeneratedFiles } from './generated.js';
import { constant, hostCode } from './routing-source.js';
import { STATE_DIR } from '../../core/layout.js';

export const FUNCTION_FILE = 'aws/viewer-request.js';
export const HEADERS_POLICY_FILE = 'aws/response-headers-policy.json';
export const TEMPLATE_FILE = 'aws/cloudformation.json';
/** CloudFront Functions' size limit for the code. */
export const FUNCTION_MAX_BYTES = 10 * 1024;
/**
 * AWS's managed cache policy "CachingOptimized": honours the objects' Cache-Control, no query in the
 * key, and the viewer's Accept-Encoding normalised to gzip, br or neither (EnableAcceptEncodingGzip and
 * -Brotli) in the key: the creators list's two encodings are two cache entries.
 */
export const CACHING_OPTIMIZED = '658327ea-f89d-4fab-a63d-7e88639e58f6';

const GENERATED = generatedBanner('aws config');

export function renderViewerRequestFunction(table: RouteTable = ROUTES): string {
  const data = { exported: false, keyword: 'var' } as const;
  return [
    `// ${GENERATED.join('\n// ')}`,
    '//',
    '// CloudFront Function, viewer request, runtime cloudfront-js-2.0 (see docs/hosting.md). ES 5.1 only.',
    '',
    constant('ROUTES', table, data),
    constant('PREFLIGHT_HEADERS', PREFLIGHT_HEADERS, data),
    constant('ALLOW_HEADER', ALLOW_HEADER, data),
    constant('OUTSIDE_HEADERS', OUTSIDE_HEADERS, data),
    constant('OUTSIDE_BODY', OUTSIDE_BODY, data),
    constant('ERROR_BODIES', ERROR_BODIES, data),
    constant('STATUS_TEXT', STATUS_TEXT, data),
    `var CANONICAL_USERNAME = ${CANONICAL_USERNAME.toString()};`,
    hostCode('cloudfront-handler.js', 'cloudfront'),
    hostCode('../routes/routing.js', 'answers'),
    hostCode('../routes/routing.js', 'routing'),
    '',
  ].join('\n');
}

/**
 * The headers CloudFront adds to every answer: what the bucket's objects cannot carry. Vary: the
 * creators list is answered in two encodings (the function picks the object; the cache policy keys
 * on the normalised Accept-Encoding), and a shared cache beyond CloudFront must keep them apart.
 */
export function renderHeadersPolicy(table: RouteTable = ROUTES): object {
  const cors = ['Access-Control-Allow-Origin', 'Access-Control-Allow-Methods'];
  const items = [
    ...cors.map((header) => ({ Header: header, Value: table.headers[header], Override: true })),
    { Header: 'Vary', Value: VARY_HEADER.Vary, Override: true },
  ];
  return {
    Name: 'profile-api-contract-headers',
    Comment: 'The public profile API contract: CORS headers on every answer, nosniff, Vary on Accept-Encoding',
    CustomHeadersConfig: { Quantity: items.length, Items: items },
    SecurityHeadersConfig: { ContentTypeOptions: { Override: true } },
  };
}

/** Both codes S3 may answer for a key it does not have: 403 without s3:ListBucket, 404 with it. */
export function customErrorResponses(table: RouteTable = ROUTES): object[] {
  const notFound = table.errors.USER_NOT_FOUND;
  return [403, 404].map((code) => ({
    ErrorCode: code,
    ResponseCode: notFound.status,
    ResponsePagePath: `/${notFound.file}`,
    ErrorCachingMinTTL: 30,
  }));
}

/** CloudFormation lists have no Quantity. */
function withoutQuantity(policy: object): object {
  return JSON.parse(JSON.stringify(policy, (key, value) => (key === 'Quantity' ? undefined : value)));
}

export function renderTemplate(table: RouteTable = ROUTES): object {
  return {
    AWSTemplateFormatVersion: '2010-09-09',
    Description: `The public profile API: a private S3 bucket that profile-snapshot publish fills, behind CloudFront with the route table's function and headers. ${GENERATED.join(' ')}`,
    Parameters: TEMPLATE_PARAMETERS,
    Conditions: TEMPLATE_CONDITIONS,
    Resources: { ...bucketResources(), ...cloudFrontResources(table) },
    Outputs: TEMPLATE_OUTPUTS,
  };
}

const TEMPLATE_PARAMETERS = {
  BucketName: { Type: 'String', Description: 'The bucket to create; publish --to s3://<BucketName>/<Prefix>' },
  Prefix: {
    Type: 'String',
    Default: '',
    AllowedPattern: '^([^/].*[^/]|[^/]?)$',
    Description: 'The key prefix given to publish --to (no leading or trailing slash; empty for none)',
  },
  Aliases: {
    Type: 'CommaDelimitedList',
    Default: '',
    Description: 'Host names of the API (e.g. profiles.example.com); empty for the cloudfront.net name only',
  },
  CertificateArn: {
    Type: 'String',
    Default: '',
    Description: 'An ACM certificate in us-east-1 for the aliases; empty with no aliases',
  },
};

const TEMPLATE_CONDITIONS = {
  HasPrefix: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'Prefix' }, ''] }] },
  HasCertificate: { 'Fn::Not': [{ 'Fn::Equals': [{ Ref: 'CertificateArn' }, ''] }] },
};

const TEMPLATE_OUTPUTS = {
  DomainName: {
    Value: { 'Fn::GetAtt': ['Distribution', 'DomainName'] },
    Description: 'Point the API host names here (CNAME or alias record)',
  },
  DistributionId: { Value: { Ref: 'Distribution' } },
  PublishTo: {
    Value: { 'Fn::If': ['HasPrefix', { 'Fn::Sub': 's3://${Bucket}/${Prefix}' }, { 'Fn::Sub': 's3://${Bucket}' }] },
    Description: 'profile-snapshot publish --to',
  },
};

/** The private bucket, readable by the distribution alone, and never under the tool's own records. */
function bucketResources(): object {
  const prefixed = (rest: string) => ({
    'Fn::If': ['HasPrefix', { 'Fn::Sub': `arn:aws:s3:::\${Bucket}/\${Prefix}/${rest}` }, { 'Fn::Sub': `arn:aws:s3:::\${Bucket}/${rest}` }],
  });
  const fromDistribution = {
    StringEquals: { 'AWS:SourceArn': { 'Fn::Sub': 'arn:aws:cloudfront::${AWS::AccountId}:distribution/${Distribution}' } },
  };
  return {
    Bucket: {
      Type: 'AWS::S3::Bucket',
      Properties: {
        BucketName: { Ref: 'BucketName' },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
      },
    },
    BucketPolicy: {
      Type: 'AWS::S3::BucketPolicy',
      Properties: {
        Bucket: { Ref: 'Bucket' },
        PolicyDocument: {
          Version: '2012-10-17',
          Statement: [
            // Objects only, no s3:ListBucket: a missing key is a 403, which the distribution turns into USER_NOT_FOUND.
            {
              Sid: 'CloudFrontReadsTheSnapshot',
              Effect: 'Allow',
              Principal: { Service: 'cloudfront.amazonaws.com' },
              Action: 's3:GetObject',
              Resource: prefixed('*'),
              Condition: fromDistribution,
            },
            {
              Sid: 'NeverTheToolsOwnRecords',
              Effect: 'Deny',
              Principal: { Service: 'cloudfront.amazonaws.com' },
              Action: 's3:GetObject',
              Resource: prefixed(`${STATE_DIR}/*`),
            },
          ],
        },
      },
    },
  };
}

/** The distribution with its origin access, viewer-request function and contract headers. */
function cloudFrontResources(table: RouteTable): object {
  const { Name: _name, ...policy } = withoutQuantity(renderHeadersPolicy(table)) as { Name: string };
  return {
    OriginAccessControl: {
      Type: 'AWS::CloudFront::OriginAccessControl',
      Properties: {
        OriginAccessControlConfig: {
          Name: { 'Fn::Sub': '${AWS::StackName}-profiles' },
          OriginAccessControlOriginType: 's3',
          SigningBehavior: 'always',
          SigningProtocol: 'sigv4',
        },
      },
    },
    ViewerRequestFunction: {
      Type: 'AWS::CloudFront::Function',
      Properties: {
        Name: { 'Fn::Sub': '${AWS::StackName}-profile-api' },
        AutoPublish: true,
        FunctionConfig: { Comment: 'The route table of the public profile API (aws/viewer-request.js)', Runtime: 'cloudfront-js-2.0' },
        FunctionCode: renderViewerRequestFunction(table),
      },
    },
    ContractHeaders: {
      Type: 'AWS::CloudFront::ResponseHeadersPolicy',
      Properties: { ResponseHeadersPolicyConfig: { Name: { 'Fn::Sub': '${AWS::StackName}-contract-headers' }, ...policy } },
    },
    Distribution: {
      Type: 'AWS::CloudFront::Distribution',
      Properties: { DistributionConfig: distributionConfig(table) },
    },
  };
}

function distributionConfig(table: RouteTable): object {
  return {
    Enabled: true,
    Comment: 'The public profile API',
    HttpVersion: 'http2and3',
    Aliases: { 'Fn::If': ['HasCertificate', { Ref: 'Aliases' }, { Ref: 'AWS::NoValue' }] },
    ViewerCertificate: {
      'Fn::If': [
        'HasCertificate',
        { AcmCertificateArn: { Ref: 'CertificateArn' }, SslSupportMethod: 'sni-only', MinimumProtocolVersion: 'TLSv1.2_2021' },
        { CloudFrontDefaultCertificate: true },
      ],
    },
    Origins: [
      {
        Id: 'snapshot',
        DomainName: { 'Fn::GetAtt': ['Bucket', 'RegionalDomainName'] },
        OriginPath: { 'Fn::If': ['HasPrefix', { 'Fn::Sub': '/${Prefix}' }, ''] },
        S3OriginConfig: { OriginAccessIdentity: '' },
        OriginAccessControlId: { 'Fn::GetAtt': ['OriginAccessControl', 'Id'] },
      },
    ],
    // Every path of the distribution runs the function: it is the only way to the bucket.
    DefaultCacheBehavior: {
      TargetOriginId: 'snapshot',
      ViewerProtocolPolicy: 'redirect-to-https',
      // Every method reaches the function, which answers OPTIONS and 405 itself; only GET and HEAD go on.
      AllowedMethods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'],
      CachedMethods: ['GET', 'HEAD'],
      CachePolicyId: CACHING_OPTIMIZED,
      Compress: true,
      ResponseHeadersPolicyId: { Ref: 'ContractHeaders' },
      FunctionAssociations: [{ EventType: 'viewer-request', FunctionARN: { 'Fn::GetAtt': ['ViewerRequestFunction', 'FunctionARN'] } }],
    },
    CustomErrorResponses: customErrorResponses(table),
  };
}

export function renderAwsFiles(table: RouteTable = ROUTES): Map<string, string> {
  const json = (value: object) => `${JSON.stringify(value, null, 2)}\n`;
  return new Map([
    [FUNCTION_FILE, renderViewerRequestFunction(table)],
    [HEADERS_POLICY_FILE, json(renderHeadersPolicy(table))],
    [TEMPLATE_FILE, json(renderTemplate(table))],
  ]);
}

/** Writes the rendered files under `root` (or, with `check`, only compares); returns those that differed. */
export function syncAwsFiles(root: string, options: { check: boolean }): string[] {
  return syncGeneratedFiles(root, renderAwsFiles(), options);
}
