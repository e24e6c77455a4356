/**
 * Import rules for src/, checked by `npm run check:imports` (part of `npm test`): no cycles, and no
 * module imports from a layer above its own. Layers, bottom to top, as docs/architecture.md lists them.
 * publish/'s folders are layers of their own, so none imports one beside it: the bucket at the bottom,
 * then the tool's keys, the leases, the plan, the record and the shards, and publish/'s own files
 * (publish.ts running the steps, the compose command, the report types) above them all.
 */
const LAYERS = [
  ['src/core/'],
  ['src/store/'],
  ['src/render/', 'src/seed/'],
  ['src/hosting/routes/'],
  ['src/output/'],
  ['src/publish/bucket/'],
  ['src/publish/keys\\.ts$'],
  ['src/publish/lease/'],
  ['src/publish/plan/'],
  ['src/publish/record/'],
  ['src/publish/shards/'],
  ['src/incremental/', 'src/hosting/serve/', 'src/hosting/hosts/', 'src/publish/(?!keys\\.ts$)[^/]+\\.ts$'],
  ['src/pass/'],
  ['src/build\\.ts$', 'src/build-options\\.ts$'],
  ['src/verify/'],
  ['src/watch/'],
  ['src/cli/'],
  ['src/index\\.ts$'],
];

const pattern = (paths) => `^(${paths.map((p) => p.replaceAll('/', '\\/')).join('|')})`;

const upward = LAYERS.slice(0, -1).map((layer, i) => ({
  name: `no-upward-from-${layer[0]
    .replace(/^src\//, '')
    .replace(/\\\.ts\$|\/$/g, '')
    .replaceAll('/', '-')}`,
  comment: `${layer.join(', ')} may import only from its own layer or the layers below it`,
  severity: 'error',
  from: { path: pattern(layer) },
  to: { path: pattern(LAYERS.slice(i + 1).flat()) },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'modules that import each other, directly or not',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...upward,
    {
      name: 'bucket-is-object-storage-alone',
      comment: 'publish/bucket/ knows no tree, record or lease: only core/ and the contract its objects are stored with',
      severity: 'error',
      from: { path: '^src/publish/bucket/' },
      to: { path: '^src/', pathNot: '^src/(core/|hosting/routes/|publish/bucket/)' },
    },
    {
      name: 'serve-and-hosts-apart',
      comment: "the origin server and the vendors' configs share the route table, nothing else",
      severity: 'error',
      from: { path: '^src/hosting/(serve|hosts)/' },
      to: { path: '^src/hosting/', pathNot: '^src/hosting/($1|routes)/' },
    },
    {
      name: 'publish-report-is-types-only',
      comment: 'the CLI and the watcher import the report types without loading the AWS SDK',
      severity: 'error',
      from: { path: '^src/publish/report\\.ts$' },
      to: { dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'v8-only-in-memory-upkeep',
      comment: "the process's V8 is the host's: only core/memory.ts touches it, and only once the process opted in",
      severity: 'error',
      from: { pathNot: '^src/core/memory\\.ts$' },
      to: { dependencyTypes: ['core'], path: '^(node:)?(v8|vm)$' },
    },
    {
      name: 'manifest-cache-owned-by-the-session',
      comment: "the cache between builds is the session's to own and hand to each build, never a module's",
      severity: 'error',
      from: { pathNot: '^src/(incremental/session|output/tree|pass/pass)\\.ts$' },
      to: { path: '^src/output/manifest-cache\\.ts$' },
    },
    {
      name: 'transaction-parts-behind-the-transaction',
      comment: 'the diff, the staging and the commit are parts of the output transaction: used through output/tree.ts',
      severity: 'error',
      from: { pathNot: '^src/(output/|incremental/trust\\.ts$)' },
      to: { path: '^src/output/(diff|staging|commit)\\.ts$' },
    },
    {
      name: 'trust-rules-handed-in-by-the-pass',
      comment: 'what a build may take from the last one is decided in incremental/trust.ts and handed to the transaction by the pass',
      severity: 'error',
      from: { pathNot: '^src/pass/' },
      to: { path: '^src/incremental/trust\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
