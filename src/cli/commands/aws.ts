/**
 * `profile-snapshot aws config`: renders the CloudFront Function, the response headers policy and the
 * CloudFormation template into aws/ from the route table; `--check` only compares, for CI.
 */
import { Command } from 'commander';
import { syncAwsFiles } from '../../hosting/hosts/aws-config.js';
import type { CliState, Io } from '../io.js';
import { hostConfigCommand } from './host-config.js';

export function awsCommand(io: Io, _state: CliState): Command {
  const command = new Command('aws').description('AWS hosting: CloudFront in front of the S3 bucket `publish` fills.');
  command.addCommand(
    hostConfigCommand(io, {
      command: 'aws',
      host: 'AWS',
      description:
        'Write aws/viewer-request.js (a CloudFront Function), aws/response-headers-policy.json and aws/cloudformation.json from the route table (src/hosting/routes/routes.ts).',
      sync: (root, flags) => syncAwsFiles(root, flags),
    }),
  );
  return command;
}
