// An S3 server for the publish benchmark: s3rver on 127.0.0.1 (a port chosen at run time) with the
// given buckets, storing under the given folder. Run with --openssl-legacy-provider: s3rver's listing
// continuation tokens use a cipher OpenSSL 3 only has there. Prints the port, then serves until killed.
import S3rver from 's3rver';

const [directory, ...buckets] = process.argv.slice(2);
const server = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true, configureBuckets: buckets.map((name) => ({ name })) });
const { port } = await server.run();
process.stdout.write(`${port}\n`);
