// A small ZLink serial-executor runtime for Node.js: the queue primitive
// (ZLinkSerialExecutionQueue), the Spot, Actor and Session coordinators, scope disposal
// with zombies (SD-1 to SD-6) and the runtime end (SD-5).
//
// It is the runtime that adapter.js puts under test, written so that a runtime author
// can read it next to specs/decisions.md, specs/disposal.md,
// model/zlink_model/queue.py and reference/zlink_reference/_shell/scope.py,
// whose state machines it follows transition by transition (the names in the comments
// are the core's: admit, transfer, enter_drain, take_next, finish, yield_turn, requeue,
// cancel, end_slice, exit_drain, close, dispose, dispose_safely, dispose_after_timeout,
// expire_timeout).
//
// How it runs. Node is single-threaded: only the event-loop thread changes a queue, so
// every transition (admission included) is one critical section without a lock (D-7).
// A queue that becomes busy posts its drain with setImmediate, the next macrotask, never
// on the submitter's stack (SE-6.5); setImmediate callbacks run first posted, first run,
// so ready owners share the loop first come, first served (D-13). A drain runs
// synchronous works inline; a work that returns a promise keeps the turn until the
// promise settles, and whoever ends a turn carries the drain on. Time is read from an
// injected clock, only between works (SE-6.4); disposal timeouts, zombie warnings and the
// runtime end's grace period are timers of the same clock.
//
// Cancellation. JavaScript cannot interrupt an await from outside, so a work learns of
// its cancellation the way JavaScript code usually does: through an AbortSignal
// (`turn.signal`) that it passes to whatever it awaits. The runtime aborts it on
// dispose; a work whose promise then rejects with the signal's reason (a
// ZLinkCancelledError) ends cancelled. A yielded work is cancelled by the runtime itself
// on its own turn (D-8, D-15). A synchronous turn cannot be interrupted and finishes.
//
// Encapsulation (SE-2.5, SE-10.1). A coordinator keeps its queues in private (#) fields
// and no public member, handle or turn hands one out: handles and turns name their
// owner by its name only. Members whose names start with `_` are this module's internal
// protocol between its own classes, not a surface for applications.

import { AsyncLocalStorage } from 'node:async_hooks';

// Deliberate bugs, named in ZLINK_NODE_BUG (comma-separated), each breaking one rule; the
// conformance kit's tests switch them on to show that the suite catches them.
const KNOWN_BUGS = ['drain_on_submitter_stack', 'scope_wait_hangs'];
const BUGS = new Set((process.env.ZLINK_NODE_BUG ?? '').split(',').filter(Boolean));
for (const name of BUGS) {
  if (!KNOWN_BUGS.includes(name)) throw new Error(`ZLINK_NODE_BUG: unknown bug ${name}; known: ${KNOWN_BUGS}`);
}

// ---------------------------------------------------------------------------- policy

const MIB = 1024 * 1024;

/** The seed's defaults of ZLinkExecutionLanePolicy (SE-6.1). */
export const POLICY_DEFAULTS = Object.freeze({
  applicationMessageCapacity: 1024,
  applicationByteCapacity: 64 * MIB,
  lifecycleMessageCapacity: 128,
  lifecycleByteCapacity: 4 * MIB,
  fixedWorkByteCost: 256,
  lifecycleBurstLimit: 8,
  ownerTimeBudgetMs: 10,
});

/**
 * A validated, frozen ZLinkExecutionLanePolicy: `fields` override the defaults.
 * Limits are injected, never constants, because a Spot, an Actor and a session use
 * different ones (SE-6.1).
 * @param {Partial<typeof POLICY_DEFAULTS>} [fields]
 */
export function lanePolicy(fields = {}) {
  const policy = { ...POLICY_DEFAULTS };
  for (const [key, value] of Object.entries(fields)) {
    if (!(key in POLICY_DEFAULTS)) throw new TypeError(`unknown policy field ${key}`);
    const integral = key !== 'ownerTimeBudgetMs';
    const zeroAllowed = key === 'fixedWorkByteCost';
    if (typeof value !== 'number' || Number.isNaN(value) || (integral && !Number.isInteger(value))) {
      throw new TypeError(`${key} must be ${integral ? 'an integer' : 'a number'}, got ${value} (SE-6.1)`);
    }
    if (zeroAllowed ? value < 0 : value <= 0) {
      throw new RangeError(`${key} must be ${zeroAllowed ? '>= 0' : '> 0'}, got ${value} (SE-6.1)`);
    }
    policy[key] = value;
  }
  return Object.freeze(policy);
}

// ---------------------------------------------------------------------------- errors

/** A submission was refused; nothing was inserted and nothing was reserved (SE-6.3). */
export class ZLinkRejectedError extends Error {
  /** @param {string} reason wire name, e.g. 'application_count' @param {string} owner */
  constructor(reason, owner) {
    super(`submission rejected by ${owner}: ${reason}`);
    this.reason = reason;
    this.owner = owner;
  }
}

/** The owner is closed: it accepts no new work. */
export class ZLinkClosedError extends ZLinkRejectedError {
  constructor(owner) { super('closed', owner); }
}

/** yieldFrameworkCall on an owner that offers no Yield (an Entry Spot, SE-4.1). */
export class ZLinkYieldNotSupportedError extends Error {}

/** yieldFrameworkCall from code that does not hold its work's turn. */
export class ZLinkNotOnTurnError extends Error {}

/** How a cancelled work ends: the reason of its aborted signal (SD-1). A work whose
 *  code throws it (or lets it through) ends cancelled, not failed. */
export class ZLinkCancelledError extends Error {
  constructor(message = 'cancelled') {
    super(message);
    this.name = 'ZLinkCancelledError';
  }
}

/** Work waited for work that needs a turn or claim the waiter holds: that wait could
 *  never end, so it throws at the call instead (SE-8.2, D-14). */
export class ZLinkReentrancyError extends Error {}

/** awaitAfterCancellation on a scope that was never disposed (SD-3, D-19). */
export class ZLinkNotDisposedError extends Error {}

/** A transition was attempted while its guard does not hold: a bug of this runtime. */
export class ZLinkProtocolError extends Error {
  constructor(transition, rule, detail) { super(`${transition}: ${detail} (${rule})`); }
}

// ----------------------------------------------------------------- the decision rules
// The pure functions of model/zlink_model/rules.py: each decides one thing.

const APPLICATION = 0;
const LIFECYCLE = 1;
const BARRIER = 2; // a line, not a lane: barrier-next work reserves in APPLICATION (D-4)
const METADATA_BYTES = 0; // D-3: no hidden per-work metadata beyond fixedWorkByteCost

/** Accept (null) or the reason to reject one submission to one lane (SE-6.3). Closed
 *  wins over capacity, count over bytes. */
function admissionVerdict(closed, lifecycle, count, bytes, itemBytes, countCap, byteCap) {
  if (closed) return 'closed';
  if (count + 1 > countCap) return lifecycle ? 'lifecycle_count' : 'application_count';
  if (bytes + itemBytes > byteCap) return lifecycle ? 'lifecycle_bytes' : 'application_bytes';
  return null;
}

/** Which line take_next serves and the lifecycle streak after it (SE-6.6, D-4, D-5):
 *  barrier-next first; lifecycle overtakes application work until `burstLimit`
 *  lifecycle items were taken in a row while application work waited. */
function selectNext(barrierReady, lifecycleReady, applicationReady, streak, burstLimit) {
  if (barrierReady) return [BARRIER, 0];
  if (lifecycleReady && (!applicationReady || streak < burstLimit)) {
    return [LIFECYCLE, applicationReady ? streak + 1 : 0];
  }
  if (applicationReady) return [APPLICATION, 0];
  return [null, streak];
}

/** The owner used its time budget (SE-6.4); checked only between works. */
function sliceExpired(now, sliceStartedAt, budget) {
  return now - sliceStartedAt >= budget;
}

// ------------------------------------------------------------------------- runtime

/** How long a zombie may outlive its scope's dispose_safely before it is reported
 *  (SD-6), in milliseconds of the runtime's clock. */
export const DEFAULT_ZOMBIE_WARN_AFTER_MS = 10_000;
/** How long the runtime end waits for cancelled zombies to end (SD-5, D-20). */
export const DEFAULT_ZOMBIE_GRACE_MS = 1_000;

/**
 * What every queue of one runtime shares: the clock read between works and used for
 * timers, the scheduler that posts drains, an optional observer of every transition,
 * the hooks that see work failures and zombie warnings, and the registry of scopes that
 * the runtime end goes through (SD-5). `postedDrains` counts callbacks posted and not
 * yet run (drains, and timer callbacks that came due, which are posted the same way):
 * with it an embedder (the adapter's `settle`) can tell that nothing is left to run.
 */
export class ZLinkRuntime {
  /**
   * @param {object} [options]
   * @param {{now(): number, callLater?(ms: number, fn: () => void): {cancel(): void}}} [options.clock]
   *   milliseconds; default performance.now with setTimeout timers
   * @param {(event: string, owner: string, work: ZLinkWorkHandle|null) => void} [options.observer]
   * @param {(error: unknown, work: ZLinkWorkHandle) => void} [options.onError]
   * @param {(zombie: ZombieInfo) => void} [options.onZombieWarning]
   */
  constructor({ clock = performance, observer = null, onError = null, onZombieWarning = null } = {}) {
    this.clock = clock;
    this.observer = observer;
    this.onError = onError
      ?? ((error, work) => console.error(`work ${work.label} failed on ${work.owner}:`, error));
    this.onZombieWarning = onZombieWarning
      ?? ((z) => console.warn(`zombie work ${z.label || '(unlabelled)'} of ${z.owner} still ${z.state} `
        + `after ${this.clock.now() - z.since} ms`));
    this.postedDrains = 0;
    this._scopes = []; // every coordinator and stand-alone queue made on this runtime
  }

  /** Run `fn` on the next macrotask (SE-6.5): I/O and timers may run before it. */
  post(fn) {
    this.postedDrains += 1;
    setImmediate(() => {
      this.postedDrains -= 1;
      fn();
    });
  }

  /** Run `fn` once `ms` milliseconds of the runtime's clock have passed, on a posted
   *  callback (never on the stack of whoever moved the clock: a work that stays busy
   *  must not run disposal code inside itself). Returns a handle with `cancel()`. */
  callLater(ms, fn) {
    let cancelled = false;
    const fire = () => this.post(() => { if (!cancelled) fn(); });
    const timer = typeof this.clock.callLater === 'function'
      ? this.clock.callLater(ms, fire)
      : setTimeout(fire, ms);
    return {
      cancel: () => {
        cancelled = true;
        if (typeof this.clock.callLater === 'function') timer.cancel();
        else clearTimeout(timer);
      },
    };
  }

  /** Active works over every scope: the global active counter of SD-5. */
  activeCount() { return this._scopes.reduce((n, s) => n + s.activeCount(), 0); }

  /** Every zombie running now, in every scope. */
  zombies() { return this._scopes.flatMap((s) => s.zombies()); }

  /**
   * The runtime end (SD-5): wait until no scope has active work left (zombies do not
   * count), destroy every scope by its flag (SD-4), cancel the zombies still running
   * and give them `zombieGraceMs` of the runtime's clock to end on their own turn.
   * Resolves with the zombies it cancelled and those it abandoned because they did not
   * end in time: the end never waits longer than that (D-20), so a zombie stuck on an
   * external call, or one that ignores its cancellation, cannot keep the process alive.
   * @returns {Promise<{cancelled: ZombieInfo[], abandoned: ZombieInfo[]}>}
   */
  async end({ zombieGraceMs = DEFAULT_ZOMBIE_GRACE_MS } = {}) {
    checkMs('zombieGraceMs', zombieGraceMs);
    for (;;) {
      const busy = this._scopes.filter((s) => s.activeCount() > 0);
      if (busy.length === 0) break;
      for (const scope of busy) await scope.awaitCompletion();
    }
    for (const scope of this._scopes) scope.destroy();
    const cancelled = this.zombies();
    for (const z of cancelled) {
      console.warn(`runtime end: cancelling zombie work ${z.label || '(unlabelled)'} of ${z.owner} (${z.state})`);
    }
    for (const scope of this._scopes) scope.dispose();
    let expired = false;
    let timer = null;
    const deadline = new Promise((resolve) => {
      timer = this.callLater(zombieGraceMs, () => { expired = true; resolve(); });
    });
    // Every scope is disposed by now, so waiting after cancellation is allowed; the
    // zombies' failures were logged as they happened and need no handler here.
    const quiet = Promise.all(this._scopes.map((s) => s.awaitAfterCancellation(() => {})));
    await Promise.race([quiet, deadline]);
    timer.cancel();
    const abandoned = expired ? this.zombies() : [];
    for (const z of abandoned) {
      console.error(`runtime end: zombie work ${z.label || '(unlabelled)'} of ${z.owner} did not end within `
        + `${zombieGraceMs} ms after its cancellation; abandoned`);
    }
    return { cancelled, abandoned };
  }

  _register(scope) { this._scopes.push(scope); }
}

// --------------------------------------------------------------------------- works

const QUEUED = 'queued'; // waiting in a line, never started
const RUNNING = 'running'; // holds the turn
const SUSPENDED = 'suspended'; // gave the turn back; its external call is pending
const REQUEUED = 'requeued'; // its resume permit waits in a line
const DONE = 'done';

// Scope modes of a queue (SD-1): how it was shut.
const OPEN = 'open';
const SAFELY = 'safely'; // dispose_safely: live works became zombies
const TIMEOUT = 'timeout'; // dispose_after_timeout: closed, the timer runs
const CANCELLED = 'cancelled'; // dispose, or the timeout expired: live works are cancelled

// The work whose code runs right now, carried through its awaits the way asyncio carries
// a task's context: the reentrancy check (SE-8.2) and isCurrent() ask it who is calling.
const currentWork = new AsyncLocalStorage();

// Failures of zombies are reported in the order they happened, across queues (SD-3).
let failureOrder = 0;

/** One accepted work: its owner and label and, once it ended, its outcome. */
export class ZLinkWorkHandle {
  // The queue that accepted it, and the turns and claims it needs when they are more
  // than that queue's: private, because the handle goes to the application, and no
  // handle may hand out a queue (SE-10.1).
  #queue;
  #gates = null;

  constructor(queue, work) {
    this.#queue = queue;
    this._work = work;
    this.label = ''; // a free-form name for logs and observers
    this.outcome = null; // 'completed', 'failed' or 'cancelled' once ended
    this.value = undefined; // its result or error
    this._seq = -1; // sequence number of its current place in line
    this._lane = APPLICATION;
    this._barrier = false;
    this._nbytes = 0; // its reservation
    this._phase = QUEUED;
    this._permit = null; // set while a resume permit waits: resolving it resumes the work
    this._abort = null; // its AbortController, from its first turn on
    this._zombie = false;
    this._executionTurn = false; // a SpotWide turn: the work is counted by its Actor queue
    this._turn = null; // on a SpotWide Actor record: the execution turn it placed
    this._quiet = false; // its failure is reported by the execution turn, not by it
    this._snapshotOf = null; // reads its Actor's state snapshot when it starts (SE-7)
    this._callbacks = [];
  }

  /** The name of the queue that accepted the work (SE-3: the runtime chose it). */
  get owner() { return this.#queue.name; }

  /** True once the work has ended (completed, failed or cancelled). */
  get done() { return this.outcome !== null; }

  /**
   * Resolves (never rejects) with the handle once the work has ended. Called from work
   * that holds a turn or claim this work needs, it throws ZLinkReentrancyError at once:
   * that wait could never end (SE-8.2, D-14).
   */
  whenDone() {
    checkReentrancy(this);
    if (this.done) return Promise.resolve(this);
    return new Promise((resolve) => this._callbacks.push(resolve));
  }

  /** Call `callback(handle)` when the work ends (at once if it has): an observer, not a
   *  wait, so it is allowed from anywhere. */
  onDone(callback) {
    if (this.done) callback(this);
    else this._callbacks.push(callback);
  }

  /** SpotWide: a work needs its Actor's claim and the Spot gate (D-14). */
  _needs(...gates) { this.#gates = gates; }

  /** The scope of the coordinator (or bare queue) that accepted the work (D-14). */
  get _owner() { return this.#queue._owner; }

  /** Whether this work holds its queue's turn right now. */
  _holdsTurn() { return this._phase === RUNNING && this.#queue._current === this; }

  /** Whether this work and `other` need a turn or claim in common. */
  _sharesGateWith(other) {
    const mine = this.#gates ?? [this.#queue];
    return other.#gates === null ? mine.includes(other.#queue) : other.#gates.some((gate) => mine.includes(gate));
  }


  _settle(outcome, value) {
    this.outcome = outcome;
    this.value = value;
    this._work = null;
    for (const callback of this._callbacks.splice(0)) callback(this);
  }
}

/** SE-8.2: waiting, from work, for work that needs a turn or claim the waiter holds can
 *  never end; throw at the call instead. Holding its turn, a work may not wait for any
 *  unfinished work of its own coordinator, on whichever queue (D-14, the seed: a
 *  synchronous wait on the same coordinator's execute* raises at once). */
function checkReentrancy(target) {
  const holder = currentWork.getStore();
  if (holder === undefined || !holder._holdsTurn()) return;
  if (target === holder || target._sharesGateWith(holder)
      || (!target.done && target._owner === holder._owner)) {
    throw new ZLinkReentrancyError(`work ${holder.label || '(unlabelled)'} on ${holder.owner} waits for work `
      + `${target.label || '(unlabelled)'} of ${target.owner}, which needs a turn the waiter holds (SE-8.2)`);
  }
}

/**
 * What a running work receives as its argument: its owner's name, its cancellation
 * signal, its Actor's state snapshot, and the one framework call that gives the turn
 * back while an external call is pending (SE-6.7).
 */
class ZLinkTurn {
  #queue;
  #rec;

  constructor(queue, rec, snapshot) {
    this.#queue = queue;
    this.#rec = rec;
    /** The Actor's registration as this message sees it, read once when the work
     *  started (SE-7); null for work that is not an Actor's. */
    this.snapshot = snapshot;
  }

  /** The name of the queue whose turn this work holds. */
  get owner() { return this.#queue.name; }

  /** Aborted when the work is cancelled (dispose, an expired disposal timeout, the
   *  runtime end); its reason is a ZLinkCancelledError. */
  get signal() { return this.#rec._abort.signal; }

  /**
   * Make a framework call: `start(signal)` starts the external call and returns its
   * result (the call completed synchronously: no yield) or a promise (pending: the turn
   * is given back, and the work continues only after queueing again and getting its
   * turn). A failed call throws on the work's own turn; so does a cancellation that
   * comes while the work is yielded (D-15), and `signal` lets the call be cut short.
   * @template T @param {(signal: AbortSignal) => T | Promise<T>} start @returns {Promise<T>}
   */
  yieldFrameworkCall(start) { return this.#queue._yieldFrameworkCall(this.#rec, start); }
}

const isThenable = (value) => value !== null && (typeof value === 'object' || typeof value === 'function')
  && typeof value.then === 'function';

const outcomeOf = (error) => (error instanceof ZLinkCancelledError ? 'cancelled' : 'failed');

/** A promise that rejects with the signal's reason once it is aborted. */
function whenAborted(signal) {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
}

function checkWork(work) {
  if (typeof work !== 'function') throw new TypeError(`work must be a function, got ${typeof work}`);
}

function checkPayload(payloadBytes) {
  if (!Number.isInteger(payloadBytes) || payloadBytes < 0) {
    throw new RangeError(`payloadBytes must be an integer >= 0, got ${payloadBytes} (SE-6.2)`);
  }
  return payloadBytes;
}

function checkMs(what, ms) {
  if (typeof ms !== 'number') throw new TypeError(`${what} must be a number, got ${typeof ms}`);
  if (Number.isNaN(ms) || ms < 0) throw new RangeError(`${what} must be >= 0, got ${ms} (D-18)`);
  return ms;
}

// -------------------------------------------------------------------------- scopes

/**
 * @typedef {object} ZombieInfo One zombie while it runs (SD-6: zombies are visible).
 * @property {string} scope the scope's name
 * @property {string} owner the queue it is queued on, or whose turn it holds or awaits
 * @property {string} label the work's label
 * @property {'queued'|'running'|'suspended'|'requeued'} state
 * @property {number} since clock reading when its scope was disposed safely
 */

/**
 * The disposal machinery of one scope: a coordinator with every queue it made, or one
 * stand-alone queue (specs/disposal.md). Internal: the public surface is ZLinkScope,
 * which keeps its Scope in a private field, so the queues listed here never leave the
 * module. The queues hold the per-queue state (mode, zombie count, live records); this
 * drives them all at once, runs the scope's timers and answers the scope's questions.
 */
class Scope {
  constructor(name, runtime, { zombieWarnAfterMs = DEFAULT_ZOMBIE_WARN_AFTER_MS } = {}) {
    if (zombieWarnAfterMs !== null) checkMs('zombieWarnAfterMs', zombieWarnAfterMs);
    this.name = name;
    this.rt = runtime;
    this.queues = []; // every queue the scope made, in order (kept after close: they may hold work)
    this.safelyOnExit = true; // SD-4: destruction makes zombies until asNotSafely()
    this.warnAfterMs = zombieWarnAfterMs;
    this.disposedAt = null;
    this.timer = null; // dispose_after_timeout
    this.warnTimer = null; // SD-6
    this.closing = () => {}; // hook: the owner closes its entries (every disposal call)
    this.cancelling = () => {}; // hook: the owner cancels what it holds outside queues
    // hook: works accepted and held back from their queue (a session's final work before
    // its turn is due), as [queue, record] pairs; they count from acceptance (D-22)
    this.held = () => [];
  }

  /** Held works not ended yet (the zombies among them only if asked). */
  liveHeld(zombiesToo) {
    return this.held().filter(([, rec]) => !rec.done && (zombiesToo || !rec._zombie));
  }

  adopt(queue) {
    this.queues.push(queue);
    // The queue's owner for SE-8.2 (D-14): the last scope to adopt it, its coordinator's
    // when a coordinator made it, else the bare queue's own.
    queue._owner = this;
    return queue;
  }

  dispose() {
    this.closing();
    this.cancelling();
    for (const q of this.queues) q._dispose();
    this.stopTimer();
  }

  disposeSafely() {
    this.closing();
    let marked = 0;
    for (const q of this.queues) marked += q._disposeSafely();
    for (const [q, rec] of this.held()) {
      // A held work is live too: it becomes a zombie with its queue, which marks it
      // again when it places it (D-22).
      if (q._mode === SAFELY && !rec.done && !rec._zombie) {
        rec._zombie = true;
        marked += 1;
      }
    }
    this.disposedAt ??= this.rt.clock.now();
    if (marked > 0 && this.warnAfterMs !== null && this.warnTimer === null) {
      this.warnTimer = this.rt.callLater(this.warnAfterMs, () => this.warnZombies());
    }
  }

  disposeAfterTimeout(timeoutMs) {
    checkMs('timeoutMs', timeoutMs);
    this.closing();
    for (const q of this.queues) q._disposeAfterTimeout();
    // D-18: no timer when nothing is left; the timer stops when everything ended first.
    // D-27: after disposeSafely the timer bounds the zombies; a timer running stays.
    // D-22: a held final work still to come counts as live work.
    const bounded = (q) => q._mode === TIMEOUT || q._mode === SAFELY;
    if (this.timer === null && (this.queues.some((q) => bounded(q) && q._live > 0)
        || this.held().some(([q, rec]) => bounded(q) && !rec.done))) {
      this.timer = this.rt.callLater(timeoutMs, () => this.expire());
      for (const q of this.queues) q._onEnd = () => this.maybeStopTimer();
    }
  }

  expire() {
    this.timer = null;
    this.cancelling();
    for (const q of this.queues) {
      if (q._mode === SAFELY) q._dispose(); // the bound on zombies (D-27): as dispose
      else q._expireTimeout();
    }
  }

  maybeStopTimer() {
    // A held work still to come keeps the timer: it is what the bound is for (D-22).
    if (this.timer !== null && this.queues.every((q) => q._live === 0)
        && this.liveHeld(true).length === 0) this.stopTimer();
  }

  stopTimer() {
    if (this.timer !== null) this.timer.cancel();
    this.timer = null;
  }

  destroy() {
    if (this.safelyOnExit) this.disposeSafely();
    else this.dispose();
  }

  /** SE-8.2 (SE-10.13) for a wait on the whole scope: a wait from a live work that the
   *  wait waits for (the work itself, or one needing a turn or claim it holds) can never
   *  end, so it throws at the call instead; a wait from outside any work costs nothing. */
  checkOwnWait(wait, zombiesToo) {
    if (BUGS.has('scope_wait_hangs')) return; // the deliberate bug: the wait waits for itself
    const waiter = currentWork.getStore();
    if (waiter === undefined || waiter.done) return;
    for (const rec of this.counted()) {
      if (!zombiesToo && rec._zombie) continue;
      if (rec === waiter || rec._turn === waiter || waiter._turn === rec || rec._sharesGateWith(waiter)) {
        throw new ZLinkReentrancyError(`work ${waiter.label || '(unlabelled)'} on ${waiter.owner} waits in `
          + `${wait} of ${this.name}, which waits for ${rec === waiter ? 'itself' : `work ${rec.label || '(unlabelled)'}`} `
          + '(SE-8.2: an immediate exception, not a deadlock)');
      }
    }
  }

  /** Resolves once no queue of the scope has live work (`zombiesToo`) or active work. */
  whenQuiet(zombiesToo = true) {
    return new Promise((resolve) => {
      const next = () => {
        const busy = this.queues.find((q) => (zombiesToo ? q._live : q._active) > 0);
        if (busy !== undefined) busy._when(zombiesToo, next);
        // A held work whose queue just emptied is placed in this same turn of the
        // event loop (D-22): look again on the next one.
        else if (this.liveHeld(zombiesToo).length > 0) setImmediate(next);
        else resolve();
      };
      next();
    });
  }

  async awaitAfterCancellation(errorHandler) {
    if (this.queues.every((q) => q._mode === OPEN)) {
      throw new ZLinkNotDisposedError(`${this.name}: awaitAfterCancellation needs the scope disposed first (SD-3, D-19)`);
    }
    this.checkOwnWait('awaitAfterCancellation', true);
    await this.whenQuiet(true);
    const failures = this.queues.flatMap((q) => q._zombieFailures.splice(0));
    failures.sort((a, b) => a[0] - b[0]);
    if (errorHandler) for (const [, error] of failures) errorHandler(error);
    else if (failures.length > 0) throw failures[0][1];
  }

  /** Live works, each once: a SpotWide work is counted by its Actor record, not by the
   *  execution turn it placed on the Spot queue (D-21). */
  * counted() {
    for (const q of this.queues) for (const rec of q._records) if (!rec._executionTurn) yield rec;
    for (const [, rec] of this.liveHeld(true)) yield rec; // held works count (D-22)
  }

  zombies() {
    const out = [];
    for (const rec of this.counted()) {
      if (!rec._zombie) continue;
      const where = rec._turn !== null && rec._turn._phase !== DONE ? rec._turn : rec;
      out.push(Object.freeze({
        scope: this.name, owner: where.owner, label: rec.label, state: where._phase, since: this.disposedAt ?? 0,
      }));
    }
    return out;
  }

  warnZombies() {
    this.warnTimer = null;
    for (const zombie of this.zombies()) this.rt.onZombieWarning(zombie);
  }
}

/**
 * The scope surface shared by the coordinators and the stand-alone queue
 * (specs/disposal.md): the three ways to shut it (SD-1), the two waits (SD-3), the
 * dispose-safely flag (SD-4), and what it holds right now (SD-2, SD-6).
 */
export class ZLinkScope {
  #scope;

  constructor(scope) {
    this.#scope = scope;
  }

  /** Close and cancel everything now: never-started works never start; started ones
   *  are cancelled on their own turn (D-8); a synchronous turn finishes (SD-1). */
  dispose() { this.#scope.dispose(); }

  /** Close and cancel nothing: every live work goes on as a zombie (SD-1, SD-2). */
  disposeSafely() { this.#scope.disposeSafely(); }

  /** Close now; cancel what is left after `timeoutMs` of the runtime's clock (SD-1). */
  disposeAfterTimeout(timeoutMs) { this.#scope.disposeAfterTimeout(timeoutMs); }

  /** Destroy: disposeSafely, or dispose after asNotSafely() (SD-4). */
  destroy() { this.#scope.destroy(); }

  /** Make destruction cancel instead of making zombies, on every queue of the scope,
   *  those made before the call included (SD-4, D-16). */
  asNotSafely() {
    this.#scope.safelyOnExit = false;
    return this;
  }

  /** Whether destruction makes zombies (the default) rather than cancelling. */
  get disposeSafelyOnExit() { return this.#scope.safelyOnExit; }

  /** Resolves once no active work is left; zombies do not count (SD-3). From a live
   *  work of this scope it throws ZLinkReentrancyError at once (SE-8.2). */
  awaitCompletion() {
    this.#scope.checkOwnWait('awaitCompletion', false);
    return this.#scope.whenQuiet(false);
  }

  /** Resolves once every work accepted by any queue of the scope ended, zombies
   *  included. From a live work of this scope it throws ZLinkReentrancyError (SE-8.2). */
  awaitQuiescence() {
    this.#scope.checkOwnWait('awaitQuiescence', true);
    return this.#scope.whenQuiet(true);
  }

  /** Resolves once every live work ended, zombies included, after handing each
   *  zombie's failure to `errorHandler(error)` in the order they happened; without a
   *  handler it rejects with the first. Rejects with ZLinkNotDisposedError on a scope
   *  that was never disposed (SD-3, D-19). */
  awaitAfterCancellation(errorHandler = null) { return this.#scope.awaitAfterCancellation(errorHandler); }

  /** Live works that are not zombies (SD-2). */
  activeCount() {
    let n = 0;
    for (const rec of this.#scope.counted()) if (!rec._zombie) n += 1;
    return n;
  }

  /** Live zombies (SD-2). */
  zombieCount() {
    let n = 0;
    for (const rec of this.#scope.counted()) if (rec._zombie) n += 1;
    return n;
  }

  /** The zombies running now, with where each is and since when (SD-6). */
  zombies() { return this.#scope.zombies(); }

  /** Reservations right now, per queue, keyed by the queue's name. */
  statistics() {
    return Object.fromEntries(this.#scope.queues.map((q) => [q.name, q._statistics()]));
  }
}

// ---------------------------------------------------------------- the queue primitive

// Marks a queue made by a coordinator: it is disposed with its coordinator, as part of
// that scope, and does not join the runtime's registry on its own. Not exported, so
// only this module can make such a queue.
const OWNED = Symbol('owned by a coordinator');

/**
 * ZLinkSerialExecutionQueue: runs the works submitted to one owner one at a time
 * (SE-6). Two lanes (application, lifecycle) with count and byte capacity, plus the
 * barrier-next line; a drain started by whoever makes an idle queue busy; time-budget
 * slices; Yield; and, as a scope of its own, disposal.
 */
export class ZLinkSerialExecutionQueue extends ZLinkScope {
  #scope;

  /**
   * @param {string} name the owner's name, as events and errors report it
   * @param {ReturnType<typeof lanePolicy>} policy
   * @param {ZLinkRuntime} runtime
   * @param {{yieldAllowed?: boolean, zombieWarnAfterMs?: number|null}} [options] an
   *   Entry Spot's queues offer no Yield
   */
  constructor(name, policy, runtime, { yieldAllowed = true, zombieWarnAfterMs, [OWNED]: owned = false } = {}) {
    const scope = new Scope(name, runtime, { zombieWarnAfterMs });
    super(scope);
    scope.adopt(this);
    this.#scope = scope;
    this.name = name;
    this.policy = policy;
    this._rt = runtime;
    this._yieldAllowed = yieldAllowed;
    this._lines = [[], [], []]; // indexed by APPLICATION, LIFECYCLE, BARRIER
    this._count = [0, 0]; // reserved per lane: accepted, unfinished works (D-9)
    this._bytes = [0, 0];
    this._records = new Set(); // the live works, in the order they were placed
    this._nextSeq = 0;
    this._drainScheduled = false;
    this._draining = false;
    this._current = null; // the work holding the turn
    this._sliceStartedAt = 0;
    this._streak = 0;
    this._closed = false;
    this._mode = OPEN;
    this._zombies = 0;
    this._zombieFailures = []; // [order, error] of zombies that failed, for SD-3
    this._waiters = []; // [zombiesToo, callback]: "no live work" or "no active work"
    this._onEnd = null; // the scope's hook when a work ends (the disposal timer)
    if (!owned) runtime._register(this);
  }

  // ------------------------------------------------------------- entries (SE-6.2)
  /** Application work reserving fixedWorkByteCost. */
  enqueue(work) { return this._admit(work, APPLICATION, 0, false); }

  /** Application work reserving its payload plus the fixed cost. */
  enqueueWithPayloadBytes(work, payloadBytes) {
    return this._admit(work, APPLICATION, checkPayload(payloadBytes), false);
  }

  /** Lifecycle work: overtakes waiting application work, within the burst limit. */
  enqueueLifecycle(work) { return this._admit(work, LIFECYCLE, 0, false); }

  /** Application work that runs right after the current turn, before queued lifecycle
   *  and application work; several keep their order (D-4). */
  enqueueBarrierNext(work) { return this._admit(work, APPLICATION, 0, true); }

  /** Whether the calling code is the work that holds this queue's turn now. */
  isCurrent() {
    const holder = currentWork.getStore();
    return holder !== undefined && holder === this._current && holder._phase === RUNNING;
  }

  /** Resolves once every accepted work has ended, zombies included. From a live work
   *  of this queue it throws ZLinkReentrancyError at once (SE-8.2). */
  awaitQuiescence() {
    this.#scope.checkOwnWait('awaitQuiescence', true);
    return this.#scope.whenQuiet(true);
  }

  /** No new submissions; accepted work still runs to its end. Idempotent. */
  close() {
    if (this._closed) return;
    this._closed = true;
    this._observe('close', null);
  }

  get closed() { return this._closed; }

  // -------------------------------------------- for the coordinators of this module
  /** Accepted, unfinished works: queued, running, suspended and requeued (D-9). */
  get _live() { return this._count[APPLICATION] + this._count[LIFECYCLE]; }

  /** Live works that are not zombies: what awaitCompletion waits for (SD-3). */
  get _active() { return this._live - this._zombies; }

  _statistics() {
    return {
      applicationCount: this._count[APPLICATION],
      applicationBytes: this._bytes[APPLICATION],
      lifecycleCount: this._count[LIFECYCLE],
      lifecycleBytes: this._bytes[LIFECYCLE],
    };
  }

  /** Place an execution turn of work that another queue already accepted (a SpotWide
   *  Actor's turn, SE-4.5, or a session's final work): reserves the fixed cost in the
   *  application lane and is never refused, not even after close (D-6). */
  _transfer(rec) {
    return this._place(rec, APPLICATION, this.policy.fixedWorkByteCost, false, 'transfer');
  }

  /** Call `fn` once no live work (`zombiesToo`) or no active work is left; at once if
   *  that is so already. */
  _when(zombiesToo, fn) {
    if ((zombiesToo ? this._live : this._active) === 0) fn();
    else this._waiters.push([zombiesToo, fn]);
  }

  _checkWaiters() {
    if (this._active > 0 || this._waiters.length === 0) return; // every wait needs no active work
    const ready = [];
    this._waiters = this._waiters.filter(([zombiesToo, fn]) => {
      if (zombiesToo && this._live > 0) return true;
      ready.push(fn);
      return false;
    });
    for (const fn of ready) fn();
  }

  // ---------------------------------------------------------- disposal (SD-1)
  /** dispose_safely: close, cancel nothing; every live work becomes a zombie (active
   *  -1, zombie +1 each, SD-2). Only an open queue; returns how many were marked. */
  _disposeSafely() {
    if (this._mode !== OPEN) return 0;
    this._closed = true;
    this._mode = SAFELY;
    let marked = 0;
    for (const rec of this._records) {
      if (!rec._zombie) {
        rec._zombie = true;
        marked += 1;
      }
    }
    this._zombies += marked;
    this._observe('dispose_safely', null);
    // Marking zombies lowers the active count without any work ending: wake the
    // awaitCompletion waiters whose condition now holds (SD-3).
    this._checkWaiters();
    return marked;
  }

  /** dispose: close and cancel everything now (zombies included); idempotent once
   *  cancelled. */
  _dispose() {
    if (this._mode === CANCELLED) return;
    this._closed = true;
    this._mode = CANCELLED;
    this._observe('dispose', null);
    this._cancelLive();
  }

  /** dispose_after_timeout: close now; the scope's timer calls _expireTimeout later. */
  _disposeAfterTimeout() {
    if (this._mode !== OPEN) return;
    this._closed = true;
    this._mode = TIMEOUT;
    this._observe('dispose_after_timeout', null);
  }

  _expireTimeout() {
    if (this._mode !== TIMEOUT) return;
    this._mode = CANCELLED;
    this._observe('expire_timeout', null);
    this._cancelLive();
  }

  /** Never-started works end here, cancelled, with their reservations released; every
   *  other live work has its signal aborted, and its cancellation reaches it on its
   *  own turn (D-8): a yielded one queues again first, one that holds its turn at an
   *  await is cancelled there, a synchronous turn finishes. A SpotWide Actor record is
   *  left alone: its outcome follows its execution turn's (D-21). */
  _cancelLive() {
    for (const source of [BARRIER, LIFECYCLE, APPLICATION]) {
      for (const rec of this._lines[source].filter((r) => r._phase === QUEUED)) {
        const line = this._lines[source];
        line.splice(line.indexOf(rec), 1);
        this._release(rec);
        this._observe('cancel', rec);
        this._ended(rec, 'cancelled', new ZLinkCancelledError(`${this.name}: disposed before it started`));
      }
    }
    const holder = this._current;
    for (const rec of [...this._records]) {
      if (!rec._quiet && rec._abort !== null && !rec._abort.signal.aborted) {
        rec._abort.abort(new ZLinkCancelledError(`${this.name}: disposed`));
      }
    }
    // SD-3a: the work holding the turn got its cancellation now (its signal's reason
    // rejects what it awaits, in the microtasks that follow). One that has not ended by
    // the next macrotask caught it and waits on, or waits on something that ignores the
    // signal: it does not end within its cancellation and becomes a zombie (core
    // transition survive_cancel). A yielded work is cancelled on its own turn instead.
    if (holder !== null && !holder._quiet && !holder._zombie) {
      this._rt.post(() => this._surviveCancel(holder));
    }
  }

  _surviveCancel(rec) {
    if (rec._phase !== RUNNING || this._current !== rec || rec._zombie) return;
    rec._zombie = true;
    this._zombies += 1;
    this._observe('survive_cancel', rec);
    // Marking a zombie lowers the active count without any work ending (SD-3).
    this._checkWaiters();
  }

  // ------------------------------------------------------------------ admission
  _admit(work, lane, payloadBytes, barrier) {
    checkWork(work);
    const nbytes = payloadBytes + METADATA_BYTES + this.policy.fixedWorkByteCost;
    const p = this.policy;
    const lifecycle = lane === LIFECYCLE;
    // Capacity check, sequence number and insertion are one step (SE-6.3): nothing
    // below can be interleaved by other code on this single thread.
    const reason = admissionVerdict(this._closed, lifecycle, this._count[lane], this._bytes[lane], nbytes,
      lifecycle ? p.lifecycleMessageCapacity : p.applicationMessageCapacity,
      lifecycle ? p.lifecycleByteCapacity : p.applicationByteCapacity);
    if (reason !== null) {
      this._observe('reject', null);
      throw reason === 'closed' ? new ZLinkClosedError(this.name) : new ZLinkRejectedError(reason, this.name);
    }
    return this._place(new ZLinkWorkHandle(this, work), lane, nbytes, barrier, 'admit');
  }

  _place(rec, lane, nbytes, barrier, event) {
    this._count[lane] += 1;
    this._bytes[lane] += nbytes;
    rec._seq = this._nextSeq++;
    rec._lane = lane;
    rec._barrier = barrier;
    rec._nbytes = nbytes;
    rec._phase = QUEUED;
    // Accepted work moved into a queue disposed safely (a SpotWide turn, a session's
    // final work) is a zombie there too (SD-2).
    rec._zombie = this._mode === SAFELY;
    if (rec._zombie) this._zombies += 1;
    this._records.add(rec);
    this._lines[barrier ? BARRIER : lane].push(rec);
    this._observe(event, rec);
    this._wake();
    return rec;
  }

  /** The first item in an idle queue schedules its drain (SE-6.5); a queue that is
   *  draining or already scheduled only inserts. At most one drain is ever scheduled
   *  or running. */
  _wake() {
    if (this._draining || this._drainScheduled) return;
    this._drainScheduled = true;
    if (BUGS.has('drain_on_submitter_stack')) {
      this._drain(); // the bug: the drain runs at once, inside the submit call
      return;
    }
    this._rt.post(() => this._drain());
  }

  // ---------------------------------------------------------------------- drain
  _now() { return this._rt.clock.now(); }

  _drain() {
    if (!this._drainScheduled || this._draining) {
      throw new ZLinkProtocolError('enter_drain', 'SE-6.5', `${this.name}: no drain scheduled, or one draining`);
    }
    this._drainScheduled = false;
    this._draining = true;
    this._sliceStartedAt = this._now();
    this._observe('enter_drain', null);
    this._runTurns(null);
  }

  /**
   * Hold the drain role: end `prev`'s turn (if given), then give turns until the
   * slice ends, nothing is ready, or a turn stays held by a work that awaits
   * something (its promise carries the drain on when it settles) or by a resumed
   * work (which carries it on when its turn ends again).
   */
  _runTurns(prev, outcome = 'completed', value = undefined) {
    for (;;) {
      const rec = this._nextStep(prev);
      if (prev !== null) this._ended(prev, outcome, value);
      if (rec === null) return;
      if (rec._permit !== null) {
        // A resume permit: the suspended work continues on its own (SE-6.7).
        const resume = rec._permit;
        rec._permit = null;
        resume();
        return;
      }
      rec._abort = new AbortController();
      // The snapshot is read once, as the message starts (SE-7.1), and never again.
      const turn = new ZLinkTurn(this, rec, rec._snapshotOf === null ? null : rec._snapshotOf());
      let result;
      try {
        result = currentWork.run(rec, rec._work, turn);
      } catch (error) {
        [prev, outcome, value] = [rec, outcomeOf(error), error];
        continue;
      }
      if (!isThenable(result)) {
        [prev, outcome, value] = [rec, 'completed', result];
        continue;
      }
      // The work keeps the turn while it awaits anything but a framework call.
      result.then((v) => this._runTurns(rec, 'completed', v), (e) => this._runTurns(rec, outcomeOf(e), e));
      return;
    }
  }

  /** finish the previous turn, then end_slice, exit_drain or take_next. */
  _nextStep(prev) {
    if (prev !== null) this._finish(prev);
    const now = this._now();
    if (sliceExpired(now, this._sliceStartedAt, this.policy.ownerTimeBudgetMs)) {
      // end_slice (SE-6.4, D-10): leave the drain and, if work is ready, schedule the
      // next slice in the same step. It is posted behind every owner that became
      // ready meanwhile, which is what makes a cut slice observable (D-13).
      this._draining = false;
      this._drainScheduled = this._hasReady();
      this._observe('end_slice', null);
      if (this._drainScheduled) this._rt.post(() => this._drain());
      return null;
    }
    if (!this._hasReady()) {
      this._draining = false; // exit_drain
      this._observe('exit_drain', null);
      return null;
    }
    return this._takeNext();
  }

  _hasReady() { return this._lines.some((line) => line.length > 0); }

  _takeNext() {
    if (!this._draining || this._current !== null) {
      throw new ZLinkProtocolError('take_next', 'SE-6.6', `${this.name}: not draining, or a turn is held`);
    }
    const [source, streak] = selectNext(this._lines[BARRIER].length, this._lines[LIFECYCLE].length,
      this._lines[APPLICATION].length, this._streak, this.policy.lifecycleBurstLimit);
    this._streak = streak;
    const rec = this._lines[source].shift();
    rec._phase = RUNNING;
    this._current = rec;
    this._observe('take_next', rec);
    return rec;
  }

  _finish(rec) {
    if (this._current !== rec) {
      throw new ZLinkProtocolError('finish', 'SE-6.7', `${this.name}: work ${rec.label} ends off its turn`);
    }
    this._current = null;
    this._release(rec);
    this._observe('finish', rec);
  }

  /** The reservation lives until the work ends, not until it starts (SE-5.2); a
   *  finished zombie leaves the scope (SD-2). */
  _release(rec) {
    rec._phase = DONE;
    this._count[rec._lane] -= 1;
    this._bytes[rec._lane] -= rec._nbytes;
    if (rec._zombie) this._zombies -= 1;
    this._records.delete(rec);
  }

  _ended(rec, outcome, value) {
    rec._settle(outcome, value);
    if (outcome === 'failed' && !rec._quiet) {
      if (rec._zombie) this._zombieFailures.push([failureOrder++, value]); // for SD-3
      this._rt.onError(value, rec);
    }
    this._checkWaiters();
    if (this._onEnd !== null) this._onEnd();
  }

  // ---------------------------------------------------------------------- Yield
  async _yieldFrameworkCall(rec, start) {
    if (!this._yieldAllowed) {
      throw new ZLinkYieldNotSupportedError(`${this.name} offers no Yield (an Entry Spot has none, SE-4.1)`);
    }
    if (this._current !== rec) throw new ZLinkNotOnTurnError('yieldFrameworkCall outside its work\'s turn');
    const { signal } = rec._abort;
    if (signal.aborted) throw signal.reason; // cancelled while it held its turn
    const pending = start(signal);
    if (!isThenable(pending)) return pending; // done already: go on without yielding
    // yield_turn: give the turn back; the work keeps its reservation (D-2). The drain
    // goes on without it in a posted callback, not on this work's stack.
    this._current = null;
    rec._phase = SUSPENDED;
    this._observe('yield_turn', rec);
    this._rt.post(() => this._runTurns(null));
    let failed = false;
    let result;
    try {
      // A cancellation cuts the wait short (D-15): the work queues again at once.
      result = await Promise.race([pending, whenAborted(signal)]);
    } catch (error) {
      failed = true;
      result = error;
    }
    // requeue: the resume permit goes to the tail of the work's own lane with a fresh
    // sequence number, with no capacity check (D-1, D-2); the work continues only when
    // the drain gives the permit the turn: no resume skips the queue (SE-6.7).
    const permit = new Promise((resolve) => { rec._permit = resolve; });
    rec._seq = this._nextSeq++;
    rec._phase = REQUEUED;
    this._lines[rec._lane].push(rec);
    this._observe('requeue', rec);
    this._wake();
    await permit;
    // Back on its own turn: a cancellation that came meanwhile is raised here (D-8).
    if (signal.aborted) throw signal.reason;
    if (failed) throw result;
    return result;
  }

  _observe(event, rec) {
    const observer = this._rt.observer;
    if (observer !== null) observer(event, this.name, rec);
  }
}

// ----------------------------------------------------------------- state snapshots

/** Actor registrations of one coordinator (SE-7). Each change builds the Actor's next
 *  frozen snapshot, so reading one for a message is a lookup and a snapshot already
 *  handed out never changes: a message never sees old and new values mixed (SE-7.2). */
class ActorRegistry {
  #snapshots = new Map();

  register(actorId, actorType, values) {
    const version = (this.#snapshots.get(actorId)?.version ?? 0) + 1;
    this.#snapshots.set(actorId, freezeSnapshot(actorId, true, actorType, { ...values }, version));
  }

  update(actorId, values) {
    const old = this.#snapshots.get(actorId);
    if (old === undefined || !old.registered) {
      this.register(actorId, old?.actorType ?? null, values);
      return;
    }
    this.#snapshots.set(actorId, freezeSnapshot(actorId, true, old.actorType, { ...old.values, ...values },
      old.version + 1));
  }

  snapshot(actorId) {
    return this.#snapshots.get(actorId) ?? freezeSnapshot(actorId, false, null, {}, 0);
  }
}

/**
 * @typedef {object} ActorStateSnapshot An Actor's registration as one message sees it.
 * @property {string} actorId
 * @property {boolean} registered
 * @property {string|null} actorType
 * @property {Readonly<Record<string, unknown>>} values
 * @property {number} version bumps on every change; equal versions, equal values
 */
function freezeSnapshot(actorId, registered, actorType, values, version) {
  return Object.freeze({ actorId, registered, actorType, values: Object.freeze(values), version });
}

function checkValues(values) {
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    throw new TypeError('registration values must be an object');
  }
  return values;
}

// --------------------------------------------------------------------- coordinators

function checkId(kind, value) {
  if (typeof value !== 'string' || value === '') throw new TypeError(`${kind} must be a non-empty string`);
  return value;
}

/** Spot kinds (SE-4.1) and a User Spot's execution modes (SE-4). */
export const SPOT_KINDS = Object.freeze(['user', 'entry', 'instance']);
export const SPOT_MODES = Object.freeze(['per_actor', 'spot_wide']);

/**
 * ZLinkSpotSerialExecutor: one per Spot. Owns the Spot queue, one Actor queue per actor
 * id and one timer queue per timer name (SE-2.2); the caller never picks a queue
 * (SE-3.1), and none of them leaves this object (SE-2.5):
 *
 *   entry            PerActor (User) / Entry     SpotWide (User) / Instance
 *   executeSpot      Spot queue                  Spot queue
 *   executeLifecycle Spot queue, lifecycle lane  Spot queue, lifecycle lane
 *   executeActor     that Actor's queue          Actor queue (claim, payload), then one
 *                                                execution turn on the Spot queue
 *   executeTimer     that timer's queue          Spot queue (no timer queue is made)
 *
 * A Spot is one scope: disposing it disposes every queue it made.
 */
export class ZLinkSpotSerialExecutor extends ZLinkScope {
  #scope;
  #spot;
  #actors = new Map();
  #timers = new Map();
  #registry = new ActorRegistry();
  #closed = false;
  #wide;
  #queueOptions;
  #rt;
  #actorPolicy;
  #timerPolicy;

  /**
   * @param {string} spotId
   * @param {object} options
   * @param {'user'|'entry'|'instance'} [options.kind]
   * @param {'per_actor'|'spot_wide'} [options.mode] User Spots only, and required there
   * @param {ZLinkRuntime} options.runtime
   * @param {number|null} [options.zombieWarnAfterMs] SD-6 threshold; null: never warn
   */
  constructor(spotId, { kind = 'user', mode, policy = lanePolicy(), actorPolicy = lanePolicy(),
    timerPolicy = lanePolicy(), runtime, zombieWarnAfterMs }) {
    checkId('spotId', spotId);
    if (!SPOT_KINDS.includes(kind)) throw new TypeError(`unknown Spot kind ${kind}`);
    if (kind === 'user' && !SPOT_MODES.includes(mode)) {
      throw new TypeError('a User Spot needs its execution mode (per_actor or spot_wide), fixed at '
        + 'registration (SE-1.2)');
    }
    if (kind !== 'user' && mode !== undefined) {
      throw new TypeError(`the execution mode is for User Spots only, not ${kind} (SE-4.1)`);
    }
    const scope = new Scope(spotId, runtime, { zombieWarnAfterMs });
    super(scope);
    this.name = spotId;
    this.#scope = scope;
    this.#wide = kind === 'instance' || mode === 'spot_wide';
    this.#queueOptions = { yieldAllowed: kind !== 'entry', [OWNED]: true };
    this.#rt = runtime;
    this.#actorPolicy = actorPolicy;
    this.#timerPolicy = timerPolicy;
    this.#spot = this.#makeQueue(spotId, policy);
    scope.closing = () => this.#closeEntries();
    runtime._register(this);
  }

  /** Spot handler work, on the Spot queue. */
  executeSpot(work) {
    this.#checkOpen();
    return this.#spot.enqueue(work);
  }

  /** Join, leave or relocation, on the Spot queue's lifecycle lane. */
  executeLifecycle(work) {
    this.#checkOpen();
    return this.#spot.enqueueLifecycle(work);
  }

  /** One Actor handler work; the queue path follows the Spot's mode (SE-4). The work
   *  sees the Actor's registration through `turn.snapshot` (SE-7). */
  executeActor(actorId, work, payloadBytes = 0) {
    this.#checkOpen();
    checkId('actorId', actorId);
    checkWork(work);
    let queue = this.#actors.get(actorId);
    if (queue === undefined) {
      queue = this.#makeQueue(`${this.name}/actor:${actorId}`, this.#actorPolicy);
      this.#actors.set(actorId, queue);
    }
    const registry = this.#registry;
    const snapshotOf = () => registry.snapshot(actorId);
    if (!this.#wide) {
      const handle = queue.enqueueWithPayloadBytes(work, payloadBytes);
      handle._snapshotOf = snapshotOf;
      return handle;
    }
    // SpotWide (SE-4.5, SE-4.6, SE-5.3): the Actor queue admits the work and reserves
    // its payload. On the Actor queue's turn, one execution turn (fixed cost only) is
    // placed on the Spot queue, and the Actor's turn is held until that work ends:
    // this held turn is the Actor's claim, kept while the work yields on the Spot.
    // The record ends as its execution turn does (D-21).
    const spot = this.#spot;
    const claim = queue.enqueueWithPayloadBytes(() => {
      const turn = new ZLinkWorkHandle(spot, work);
      turn.label = claim.label;
      turn._executionTurn = true;
      turn._needs(spot, queue);
      turn._snapshotOf = snapshotOf;
      claim._turn = turn;
      spot._transfer(turn);
      return new Promise((resolve, reject) => {
        turn.onDone((ended) => (ended.outcome === 'completed' ? resolve(ended.value) : reject(ended.value)));
      });
    }, payloadBytes);
    claim._needs(queue, spot);
    claim._quiet = true; // a failure is reported once, by the Spot queue that ran it
    return claim;
  }

  /** A timer callback: on its own timer queue, or straight on the Spot queue in
   *  SpotWide and Instance Spots (SE-4.4). */
  executeTimer(timerName, work) {
    this.#checkOpen();
    checkId('timerName', timerName);
    if (this.#wide) return this.#spot.enqueue(work);
    let queue = this.#timers.get(timerName);
    if (queue === undefined) {
      queue = this.#makeQueue(`${this.name}/timer:${timerName}`, this.#timerPolicy);
      this.#timers.set(timerName, queue);
    }
    return queue.enqueue(work);
  }

  /** Register (or re-register) an Actor with its type and values. A message already
   *  running keeps the snapshot it started with (SE-7.2). */
  registerActor(actorId, actorType, values) {
    this.#registry.register(checkId('actorId', actorId), actorType ?? null, checkValues(values));
  }

  /** Change some of an Actor's registered values, all in one step. */
  updateActorRegistration(actorId, values) {
    this.#registry.update(checkId('actorId', actorId), checkValues(values));
  }

  /** An Actor's state right now, as a message starting now would see it. */
  actorSnapshot(actorId) { return this.#registry.snapshot(checkId('actorId', actorId)); }

  /** Remove the Spot: no new work on any entry, every queue closed; accepted work
   *  still runs to its end. Idempotent. */
  close() {
    this.#closeEntries();
    for (const queue of this.#scope.queues) queue.close();
  }

  get closed() { return this.#closed; }

  /** Closed to new work on every entry; the maps are emptied in the same step, so the
   *  Spot's Actor and timer queues go with it (SE-2.2). The scope still reaches them
   *  while they hold accepted work. */
  #closeEntries() {
    this.#closed = true;
    this.#actors.clear();
    this.#timers.clear();
  }

  #makeQueue(name, policy) {
    return this.#scope.adopt(new ZLinkSerialExecutionQueue(name, policy, this.#rt, this.#queueOptions));
  }

  #checkOpen() {
    if (this.#closed) throw new ZLinkClosedError(this.name);
  }
}

/** ZLinkActorSerialExecutor: one per Actor; exactly one queue, no map (SE-2.3). */
export class ZLinkActorSerialExecutor extends ZLinkScope {
  #scope;
  #queue;
  #registry = new ActorRegistry();
  #actorType;
  #closed = false;

  constructor(actorId, { policy = lanePolicy(), runtime, actorType = null, zombieWarnAfterMs }) {
    checkId('actorId', actorId);
    const scope = new Scope(actorId, runtime, { zombieWarnAfterMs });
    super(scope);
    this.name = actorId;
    this.#scope = scope;
    this.#actorType = actorType;
    this.#registry.register(actorId, actorType, {});
    this.#queue = scope.adopt(new ZLinkSerialExecutionQueue(actorId, policy, runtime, { [OWNED]: true }));
    scope.closing = () => { this.#closed = true; };
    runtime._register(this);
  }

  /** One handler work, application lane, payload reserved; it sees the Actor's
   *  registration through `turn.snapshot` (SE-7). */
  executeActor(work, payloadBytes = 0) {
    this.#checkOpen();
    const handle = this.#queue.enqueueWithPayloadBytes(work, payloadBytes);
    handle._snapshotOf = () => this.#registry.snapshot(this.name);
    return handle;
  }

  /** The Actor's lifecycle control, lifecycle lane. */
  executeLifecycle(work) {
    this.#checkOpen();
    return this.#queue.enqueueLifecycle(work);
  }

  /** Replace the Actor's registered values (its type stays unless given). */
  register(values, actorType = this.#actorType) {
    this.#actorType = actorType;
    this.#registry.register(this.name, actorType, checkValues(values));
  }

  /** Change some registered values, all in one step (SE-7.2). */
  updateRegistration(values) { this.#registry.update(this.name, checkValues(values)); }

  /** The Actor's state right now, as a message starting now would see it. */
  snapshot() { return this.#registry.snapshot(this.name); }

  close() {
    this.#closed = true;
    this.#queue.close();
  }

  get closed() { return this.#closed; }

  #checkOpen() {
    if (this.#closed) throw new ZLinkClosedError(this.name);
  }
}

/**
 * ZLinkSessionSerialExecutor: one per STREAM session; exactly one queue (SE-2.3).
 * Lanes as in D-12: packets use the application lane and reserve their payload;
 * control and infrastructure work use the lifecycle lane, so they overtake a backlog of
 * packets and keep their order among themselves. executeFinal closes the session at
 * once and runs its work after every work accepted before it has ended.
 */
export class ZLinkSessionSerialExecutor extends ZLinkScope {
  #scope;
  #queue;
  #final = null;
  #closed = false;

  constructor(sessionId, { policy = lanePolicy(), runtime, zombieWarnAfterMs }) {
    checkId('sessionId', sessionId);
    const scope = new Scope(sessionId, runtime, { zombieWarnAfterMs });
    super(scope);
    this.name = sessionId;
    this.#scope = scope;
    this.#queue = scope.adopt(new ZLinkSerialExecutionQueue(sessionId, policy, runtime, { [OWNED]: true }));
    scope.closing = () => { this.#closed = true; };
    // D-22: a final work not placed yet was accepted; disposal ends it cancelled, and it
    // never runs.
    scope.cancelling = () => {
      const final = this.#final;
      if (final !== null && !final.done && final._seq < 0) {
        final._settle('cancelled', new ZLinkCancelledError(`${this.name}: disposed before its final work ran`));
      }
    };
    // D-22: the final work is a work from its acceptance: counted, waited for, a zombie
    // after dispose_safely, bounded by the timer, while it waits for its turn.
    scope.held = () => {
      const final = this.#final;
      return final !== null && !final.done && final._seq < 0 ? [[this.#queue, final]] : [];
    };
    runtime._register(this);
  }

  executeApplication(work, payloadBytes = 0) {
    this.#checkOpen();
    return this.#queue.enqueueWithPayloadBytes(work, payloadBytes);
  }

  executeControl(work) {
    this.#checkOpen();
    return this.#queue.enqueueLifecycle(work);
  }

  executeInfrastructure(work) {
    this.#checkOpen();
    return this.#queue.enqueueLifecycle(work);
  }

  /** The last work of the session: accepted now, placed (never refused, D-6) once every
   *  work accepted before it has ended, yielded ones and zombies included; nothing
   *  comes after. */
  executeFinal(work) {
    this.#checkOpen();
    checkWork(work);
    this.#closed = true;
    const queue = this.#queue;
    queue.close();
    const final = new ZLinkWorkHandle(queue, work);
    this.#final = final;
    queue._when(true, () => {
      if (!final.done) queue._transfer(final);
    });
    return final;
  }

  close() {
    this.#closed = true;
    this.#queue.close();
  }

  get closed() { return this.#closed; }

  #checkOpen() {
    if (this.#closed) throw new ZLinkClosedError(this.name);
  }
}
