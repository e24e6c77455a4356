/**
 * The scheduler files of docs/scaling-out/, checked by their ecosystems' own validators: the GitHub
 * Actions workflow by action-validator (the workflow schema GitHub's editor uses), the Kubernetes
 * manifests by kubernetes-models (the API server's OpenAPI schemas). And what each must say for the
 * shards to come out right: n machines, each given its own i of the same n.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { REPO, tempDir } from '../helpers/store.js';

const DOCS = join(REPO, 'docs/scaling-out');
const WORKFLOW = join(DOCS, 'github-actions.yml');
const IMAGE_WORKFLOW = join(REPO, '.github/workflows/image.yml');
/** What the image workflow publishes, and so what the manifests must run (owner "example"). */
const IMAGE = /^ghcr\.io\/example\/profile-snapshot:\d+\.\d+$/;
/** The Dockerfile's user. */
const IMAGE_UID = 10001;
const SHARDS = 4;

function actionValidator(file: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [join(REPO, 'node_modules/@action-validator/cli/cli.mjs'), file], { encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** Each document of a manifest file, validated as its kind. */
function validateManifests(text: string): { kind: string; object: any }[] {
  const kinds: Record<string, new (data: any) => { validate(): void }> = { Job, StatefulSet, Service, ConfigMap };
  return parseAllDocuments(text).map((document) => {
    const object = document.toJSON();
    const Model = kinds[object.kind];
    if (Model === undefined) throw new Error(`no schema for kind ${object.kind}`);
    new Model(object).validate();
    return { kind: object.kind, object };
  });
}

/** The value the pod's container gives an environment variable. */
const envOf = (container: any, name: string) => container.env.find((entry: any) => entry.name === name);

describe('the GitHub Actions workflow', () => {
  it.each([
    ['the sharded publish', WORKFLOW],
    ['the image', IMAGE_WORKFLOW],
  ])('%s: passes action-validator, which fails a broken copy of it', (_name, file) => {
    const valid = actionValidator(file);
    expect(valid.status, valid.output).toBe(0);
    const dir = tempDir('profile-snapshot-workflow-');
    try {
      const broken = join(dir.path, 'broken.yml');
      writeFileSync(broken, readFileSync(file, 'utf8').replace('runs-on: ubuntu-latest', 'runs_on: ubuntu-latest'));
      expect(actionValidator(broken).status).not.toBe(0);
    } finally {
      dir.cleanup();
    }
  });

  it('publishes the image to ghcr.io on main and tags, and only builds it for pull requests', () => {
    const workflow = parse(readFileSync(IMAGE_WORKFLOW, 'utf8'));
    expect(workflow.on.push).toEqual({ branches: ['main'], tags: ['v*'] });
    expect(workflow.permissions.packages).toBe('write');
    const steps: any[] = workflow.jobs.image.steps;
    const step = (action: string) => steps.find((s) => String(s.uses).startsWith(`docker/${action}@`));
    expect(step('metadata-action').with.images).toBe('ghcr.io/${{ github.repository_owner }}/profile-snapshot');
    expect(step('login-action').with.password).toBe('${{ secrets.GITHUB_TOKEN }}');
    expect(step('build-push-action').with.push).toBe("${{ github.event_name != 'pull_request' }}");
  });

  it('runs one job per shard of the same n, then the composing step after all of them', () => {
    const workflow = parse(readFileSync(WORKFLOW, 'utf8'));
    const shard = workflow.jobs.shard;
    expect(shard.strategy.matrix.shard).toEqual([...Array(SHARDS).keys()]);
    expect(shard.strategy['fail-fast']).toBe(false);
    expect(shard.env.PROFILE_SHARD).toBe(`\${{ matrix.shard }}/${SHARDS}`);
    const run = shard.steps.map((step: any) => step.run ?? '').join('\n');
    for (const command of ['profile-snapshot build', 'profile-snapshot verify', 'profile-snapshot publish']) expect(run).toContain(command);
    expect(workflow.jobs.compose.needs).toBe('shard');
    expect(workflow.jobs.compose.steps.at(-1).run).toContain('profile-snapshot compose');
  });
});

describe('the Kubernetes manifests', () => {
  it('validate against the Kubernetes schemas, which refuse a broken copy', () => {
    const job = readFileSync(join(DOCS, 'kubernetes-job.yaml'), 'utf8');
    const watchers = readFileSync(join(DOCS, 'kubernetes-watchers.yaml'), 'utf8');
    expect(validateManifests(job).map((d) => d.kind)).toEqual(['Job']);
    expect(validateManifests(watchers).map((d) => d.kind)).toEqual(['ConfigMap', 'Service', 'StatefulSet', 'StatefulSet']);
    expect(() => validateManifests(job.replace(`completions: ${SHARDS}`, 'completions: four'))).toThrow();
    expect(() => validateManifests(watchers.replace('replicas: 4', 'replicas: four'))).toThrow();
  });

  it('give each pod of the Indexed Job its index of the same n as the shard', () => {
    const job = validateManifests(readFileSync(join(DOCS, 'kubernetes-job.yaml'), 'utf8'))[0]!.object;
    expect(job.spec.completionMode).toBe('Indexed');
    expect(job.spec.completions).toBe(SHARDS);
    const container = job.spec.template.spec.containers[0];
    expect(envOf(container, 'SHARD_INDEX').valueFrom.fieldRef.fieldPath).toBe(
      "metadata.annotations['batch.kubernetes.io/job-completion-index']",
    );
    expect(envOf(container, 'PROFILE_SHARD').value).toBe(`$(SHARD_INDEX)/${SHARDS}`);
    // Defined before the variable that refers to it: Kubernetes expands $(VAR) only from earlier entries.
    expect(container.env.findIndex((e: any) => e.name === 'SHARD_INDEX')).toBeLessThan(
      container.env.findIndex((e: any) => e.name === 'PROFILE_SHARD'),
    );
    expect(container.image).toMatch(IMAGE);
    expect(job.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: IMAGE_UID });
  });

  it('give each watcher and its standby the pod ordinal of the same n as the shard', () => {
    const sets = validateManifests(readFileSync(join(DOCS, 'kubernetes-watchers.yaml'), 'utf8')).filter((d) => d.kind === 'StatefulSet');
    expect(sets.map((d) => d.object.metadata.name)).toEqual(['profile-snapshot', 'profile-snapshot-standby']);
    for (const { object } of sets) {
      expect(object.spec.replicas).toBe(SHARDS);
      const container = object.spec.template.spec.containers[0];
      expect(envOf(container, 'SHARD_INDEX').valueFrom.fieldRef.fieldPath).toBe("metadata.labels['apps.kubernetes.io/pod-index']");
      expect(envOf(container, 'PROFILE_SHARD').value).toBe(`$(SHARD_INDEX)/${SHARDS}`);
      expect(container.args).toEqual(expect.arrayContaining(['watch', '--publish']));
      expect(container.readinessProbe.httpGet.path).toBe('/healthz');
      // The repository's image, as its user; only the LiteFS sidecar (FUSE) is privileged.
      expect(container.image).toMatch(IMAGE);
      expect(object.spec.template.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: IMAGE_UID });
      expect(container.securityContext.privileged).toBeUndefined();
      const litefs = object.spec.template.spec.initContainers.find((c: any) => c.name === 'litefs');
      expect(litefs.restartPolicy).toBe('Always');
      expect(litefs.volumeMounts.find((m: any) => m.mountPath === '/litefs').mountPropagation).toBe('Bidirectional');
      expect(container.volumeMounts.find((m: any) => m.mountPath === '/litefs').mountPropagation).toBe('HostToContainer');
    }
  });
});
