/**
 * One pass over the store snapshot a build is in: every candidate row, or with a selection only
 * those users (everything else carried over, see incremental/selective.ts). Each row is kept
 * unrendered when the incremental layer says it may be, or rendered and staged; then the creators
 * list, the error documents and the contract. The caller commits the staged output. A full pass of
 * a large store is shared between threads (threads.ts), each reading one slice of the users.
 */
import { performance } from 'node:perf_hooks';
import { contractText } from '../core/contract.js';
import { StrictWarningsError } from '../core/errors.js';
import type { ManifestCache } from '../output/manifest-cache.js';
import { fingerprint } from '../core/hash.js';
import { CREATORS_FILE, errorFile, OPENAPI_FILE } from '../core/layout.js';
import { collectIfGrown, collectNow } from '../core/memory.js';
import { RowKeeper, signatureOf } from '../incremental/row-keeper.js';
import { carryOverUnselected, checkDuplicateHolder, SelectionFallsShort } from '../incremental/selective.js';
import type { Selection } from '../incremental/session.js';
import { CreatorsList } from '../output/creators.js';
import { manifestBytes } from '../output/manifest.js';
import { OutputTransaction, SliceTransaction } from '../output/tree.js';
import { trustFor } from '../incremental/trust.js';
import type { RenderKey } from '../core/render-key.js';
import { nextAgeChangeMs } from '../render/dates.js';
import {
  ERRORS,
  SUCCESS_HEAD,
  envelopeTail,
  errorBody,
  errorDocument,
  meta,
  successDocument,
  type ErrorCode,
} from '../render/documents.js';
import { renderUser, type RowWarning } from '../render/user.js';
import { selectedRows, sliceRows, type RowScope } from '../store/queries.js';
import { Col, ProfileStore, type StoreRow } from '../store/read.js';
import type { Slice } from '../core/slice.js';
import { PassThreads, type PassCounts, type PassHandover, type SliceHooks, type SliceInputs } from './threads.js';

const PROGRESS_EVERY = 10_000;
/** How often (in rows) a shared pass's threads look at each other's flags. */
const POLL_EVERY = 256;

/** What a pass needs, resolved once by the build. */
export interface PassInputs {
  store: ProfileStore;
  /** Absolute. */
  outDir: string;
  /** The users the pass publishes: all (slice 0 of 1), or a shard's. */
  users: Slice;
  renderKey: RenderKey;
  baseUrl: string;
  snapshotMs: number;
  /** executionTimeMs is written as 0, so bytes repeat exactly. */
  reproducible: boolean;
  strict: boolean;
  onProgress: ((rowsRead: number) => void) | undefined;
  /** When the build started (performance.now()), for the list's executionTimeMs. */
  started: number;
  /** Threads a full pass may be shared between, and the gzip variant's pieces deflated on (1: one thread). */
  threads: number;
  /** `build --full`: every file the manifest says is unchanged is checked on disk, and rewritten if damaged. */
  healing: boolean;
  /** The manifest the last build of this process wrote, kept by a watcher's session. */
  manifests?: ManifestCache | undefined;
}

/** A pass rendered and staged, its output not committed yet. */
export interface StagedPass extends PassCounts {
  output: OutputTransaction;
  creators: number;
  /** Whether it read only the selected users (a selective pass can fall back to a full one). */
  selective: boolean;
  /** Threads that read the store's rows (see threads.ts). */
  threads: number;
}

/**
 * Stages a pass over the selected users, or over every row when there is no selection or the
 * selective pass would not give a full pass's result.
 */
export function stagePass(inputs: PassInputs, selection: Selection | undefined): StagedPass {
  if (selection !== undefined) {
    try {
      return new OwnerPass(inputs, selection).stage();
    } catch (error) {
      if (!(error instanceof SelectionFallsShort)) throw error;
    }
  }
  // Started first, so the other threads load while this one reads the last build's manifest.
  const threads = startThreads(inputs);
  let pass: OwnerPass;
  try {
    pass = new OwnerPass(inputs, undefined, threads);
  } catch (error) {
    threads?.stop();
    throw error;
  }
  return pass.stage();
}

function startThreads(inputs: PassInputs): PassThreads | undefined {
  const { store, threads, outDir, renderKey, baseUrl, snapshotMs, reproducible, healing, users } = inputs;
  if (threads < 2) return undefined;
  const shared = { db: store.file, busyTimeoutMs: store.busyTimeoutMs, outDir, renderKey, baseUrl, snapshotMs, reproducible, healing };
  return PassThreads.start(store, shared, threads, manifestBytes(outDir), users);
}

/**
 * One slice of a full pass, on another thread (thread.ts): opens its own connection, takes its
 * snapshot, and once the owner lets it go, reads, renders and stages the slice's users. Undefined
 * when the owner reads the slice itself (their snapshots could not be proven the same).
 */
export function stageSlice(shared: SliceInputs, hooks: SliceHooks): PassHandover | undefined {
  const store = ProfileStore.open(shared.db, { busyTimeoutMs: shared.busyTimeoutMs });
  try {
    // Its own commit mark is of no use: the owner's proves the snapshot.
    return store.inSnapshot(
      () => {
        const go = hooks.mayGo();
        if (go === undefined) return undefined;
        const inputs: PassInputs = {
          ...shared,
          users: shared.slice,
          store,
          strict: false,
          onProgress: undefined,
          started: performance.now(),
          threads: 1,
        };
        return new SlicePass(inputs, shared.slice, go.mayKeepMembers).stage(hooks);
      },
      { mark: false },
    );
  } finally {
    store.close();
  }
}

/** What both kinds of pass do with each row: keep it, or render and stage it. */
abstract class RowReader<Output extends OutputTransaction | SliceTransaction> {
  protected readonly creators: CreatorsList;
  protected readonly keeper: RowKeeper;
  protected readonly warnings: RowWarning[] = [];
  protected profiles = 0;
  protected skipped = 0;
  protected rendered = 0;
  protected rowsRead = 0;
  /** Carried-over profiles were not read: the selection says when the first of their ages turns over. */
  protected stableUntilMs = Infinity;
  /** Called every POLL_EVERY rows: the shared pass's flags. */
  protected onRows: (() => void) | undefined;

  protected constructor(
    protected readonly inputs: PassInputs,
    protected readonly output: Output,
    mayKeepMembers: boolean,
  ) {
    this.creators = new CreatorsList(output, CREATORS_FILE, undefined, mayKeepMembers);
    this.keeper = new RowKeeper(output, this.creators, inputs.snapshotMs);
  }

  /** A published name already taken by a lower id (rows arrive in id order): see OwnerPass. */
  protected onDuplicate(_name: string, _id: number): void {}

  protected readRows(scope: RowScope): void {
    this.inputs.store.forEachRow((row) => this.readRow(row), scope);
  }

  /** Rows read by other threads so far, for progress. */
  protected otherRowsRead(): number {
    return 0;
  }

  private readRow(row: StoreRow): void {
    const rowsRead = ++this.rowsRead;
    if (rowsRead % POLL_EVERY === 0) this.onRows?.();
    if (rowsRead % PROGRESS_EVERY === 0) {
      this.inputs.onProgress?.(rowsRead + this.otherRowsRead());
      collectIfGrown('rows');
    }
    const kept = this.keeper.keep(row);
    if (kept !== true) this.renderRow(row, kept);
  }

  /** Renders a row and stages its profile; `computedSignature` is the keeper's, if it made one. */
  private renderRow(row: StoreRow, computedSignature: string | undefined): void {
    const { snapshotMs, baseUrl } = this.inputs;
    this.rendered++;
    const renderStarted = performance.now();
    const result = renderUser(row, { baseUrl, snapshotMs });
    if (result.warnings.length > 0) this.warnings.push(...result.warnings);
    if (!result.published) {
      this.skipped++;
      return;
    }
    const { user } = result;
    this.stableUntilMs = Math.min(this.stableUntilMs, nextAgeChangeMs(result.createdMs, snapshotMs));
    const name = user.username.toLowerCase();
    // Rows arrive in id order, so the first of a case-insensitive duplicate has the lowest id.
    if (this.output.hasProfile(name)) {
      this.onDuplicate(name, row.user[Col.id]);
      this.warnings.push({
        id: row.user[Col.id],
        reason: "username equals another user's ignoring letter case, and that user has a lower id; not published",
      });
      this.skipped++;
      return;
    }
    const userJson = JSON.stringify(user);
    const hash = fingerprint(userJson);
    const signature = signatureOf(row, user.accountAgeDays, result.warnings.length > 0, computedSignature);
    const memberLength = user.status === 'active' ? this.creators.add(name, userJson, hash) : undefined;
    const document = () => successDocument(userJson, meta(snapshotMs, this.elapsedSince(renderStarted)));
    this.output.profile(name, hash, signature, memberLength, document);
    this.profiles++;
  }

  protected elapsedSince(since: number): number {
    return this.inputs.reproducible ? 0 : performance.now() - since;
  }

  /** What was read, kept and rendered so far. */
  protected counts(): PassCounts {
    return {
      profiles: this.profiles + this.keeper.kept,
      skipped: this.skipped,
      rendered: this.rendered,
      rowsRead: this.rowsRead,
      warnings: this.warnings,
      stableUntilMs: Math.min(this.stableUntilMs, this.keeper.stableUntilMs),
    };
  }
}

/** The pass a build stages and commits: all users, or its own slice and its threads' handovers. */
class OwnerPass extends RowReader<OutputTransaction> {
  private threadsUsed = 1;
  /** The other threads of a full pass this thread owns, while they work. */
  private threads: PassThreads | undefined;

  constructor(
    inputs: PassInputs,
    private readonly selection: Selection | undefined,
    threads?: PassThreads,
  ) {
    const trust = trustFor(inputs.renderKey, inputs.healing);
    super(inputs, OutputTransaction.begin(inputs.outDir, { trust, ownSlice: threads?.ownSlice, cache: inputs.manifests }), true);
    this.threads = threads;
    this.stableUntilMs = selection?.stableUntilMs ?? Infinity;
  }

  stage(): StagedPass {
    try {
      if (this.selection !== undefined) {
        this.profiles += carryOverUnselected(this.output, this.creators, this.inputs.store, this.selection);
        this.readRows(selectedRows(this.inputs.users));
      } else {
        this.output.readsEveryRow();
        this.readShared();
      }
      this.inputs.onProgress?.(this.rowsRead);
      // A full pass collects before the list: a shared one has just taken in its threads' slices,
      // whose garbage would otherwise stay through the list's writing. A selective pass read few
      // rows, and the list collects once it is written (letGoOfMembers): a full collection costs as
      // much as the live heap, a million carried entries, so one a cycle will do.
      if (this.selection === undefined) collectIfGrown('before-list');
      this.stageFixedDocuments();
      if (this.inputs.strict && this.warnings.length > 0) throw new StrictWarningsError(this.warnings);
      return this.result();
    } catch (error) {
      this.threads?.stop();
      this.output.abort();
      throw error;
    }
  }

  protected override onDuplicate(name: string, id: number): void {
    checkDuplicateHolder(this.output, this.inputs.store, this.selection, name, id);
  }

  protected override otherRowsRead(): number {
    return this.threads?.rowsRead() ?? 0;
  }

  /**
   * Every row, shared with other threads when the store is large enough (threads.ts): this
   * thread reads its own slice, then takes over what the others staged, and reads any slice they
   * could not.
   */
  private readShared(): void {
    const { threads } = this;
    if (threads === undefined) return this.readRows(sliceRows(this.inputs.users));
    threads.ownerReady(this.creators.canKeep);
    // A slice's read starts with one statement that hashes every name of the store (its ids),
    // without a row to poll between: the threads are let go before it, to run theirs beside it.
    threads.releaseWhenReady();
    this.onRows = () => threads.poll();
    this.readRows(sliceRows(threads.ownSlice));
    this.threads = undefined; // collect ends them, whatever happens
    const { handovers, unread } = threads.collect();
    for (const slice of unread) {
      this.output.includeSlice(slice);
      this.readRows(sliceRows(slice));
    }
    for (const handover of handovers) this.adopt(handover);
    this.threadsUsed += handovers.length;
    // In id order, as a single thread reads them (a row's own warnings keep their order).
    if (handovers.length > 0) this.warnings.sort((a, b) => a.id - b.id);
  }

  private adopt(handover: PassHandover): void {
    this.output.adopt(handover.output);
    collectNow('adopted-profiles');
    this.creators.adopt(handover.creators, handover.output);
    this.profiles += handover.profiles;
    this.skipped += handover.skipped;
    this.rendered += handover.rendered;
    this.rowsRead += handover.rowsRead;
    for (const warning of handover.warnings) this.warnings.push(warning);
    this.stableUntilMs = Math.min(this.stableUntilMs, handover.stableUntilMs);
  }

  /** The creators list, the error documents and the contract (published byte for byte). */
  private stageFixedDocuments(): void {
    const { snapshotMs, started, threads, users } = this.inputs;
    const tail = () => envelopeTail(meta(snapshotMs, this.elapsedSince(started)));
    // A shard's list is a part of the joined one: its gzip pieces must not lean on its own head.
    this.creators.finish(this.output, SUCCESS_HEAD, tail, { threads, partOfJoined: users.count > 1 });
    for (const code of Object.keys(ERRORS) as ErrorCode[]) {
      const spec = ERRORS[code];
      this.output.file(errorFile(code), fingerprint(errorBody(spec)), () => errorDocument(spec, meta(snapshotMs, 0)));
    }
    const contract = contractText();
    this.output.file(OPENAPI_FILE, fingerprint(contract), () => contract);
  }

  private result(): StagedPass {
    return {
      ...this.counts(),
      output: this.output,
      creators: this.creators.size,
      selective: this.selection !== undefined,
      threads: this.threadsUsed,
    };
  }
}

/** A thread's slice of a full pass: its rows, staged into the owner's folder and handed over. */
class SlicePass extends RowReader<SliceTransaction> {
  constructor(
    inputs: PassInputs,
    private readonly slice: Slice,
    mayKeepMembers: boolean,
  ) {
    super(inputs, SliceTransaction.join(inputs.outDir, slice, trustFor(inputs.renderKey, inputs.healing)), mayKeepMembers);
  }

  stage(hooks: SliceHooks): PassHandover {
    try {
      this.onRows = () => hooks.rowsRead(this.rowsRead);
      this.output.readsEveryRow();
      this.readRows(sliceRows(this.slice));
      const counts = this.counts();
      const output = this.output.handOver();
      return { ...counts, output, creators: this.creators.handOver(output.names) };
    } catch (error) {
      this.output.abort();
      throw error;
    }
  }
}
