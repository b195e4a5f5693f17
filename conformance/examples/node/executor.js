// A small ZLink serial-executor runtime for Node.js: the queue primitive
// (ZLinkSerialExecutionQueue) and the Spot, Actor and Session coordinators.
//
// It is the runtime that adapter.js puts under test, written so that a runtime author
// can read it next to specs/decisions.md and model/zlink_model/queue.py,
// whose state machine it follows transition by transition (the names in the comments
// are the core's: admit, transfer, enter_drain, take_next, finish, yield_turn, requeue,
// end_slice, exit_drain, close).
//
// How it runs. Node is single-threaded: only the event-loop thread changes a queue, so
// every transition (admission included) is one critical section without a lock (D-7).
// A queue that becomes busy posts its drain with setImmediate, the next macrotask, never
// on the submitter's stack (SE-6.5); setImmediate callbacks run first posted, first run,
// so ready owners share the loop first come, first served (D-13). A drain runs
// synchronous works inline; a work that returns a promise keeps the turn until the
// promise settles, and whoever ends a turn carries the drain on. Time is read from an
// injected clock, only between works (SE-6.4).
//
// Not here (the adapter does not declare them): disposal and zombies (SD), Actor
// registrations and snapshots (SE-7), and the reentrancy check of SE-8.2.

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

/**
 * What every queue of one runtime shares: the clock read between works, the scheduler
 * that posts drains, an optional observer of every transition, and the hook that sees
 * work failures. `postedDrains` counts drains posted and not yet run: with it an
 * embedder (the adapter's `settle`) can tell that nothing is left to run.
 */
export class ZLinkRuntime {
  /**
   * @param {object} [options]
   * @param {{now(): number}} [options.clock] milliseconds; default performance.now
   * @param {(event: string, owner: string, work: ZLinkWorkHandle|null) => void} [options.observer]
   * @param {(error: unknown, work: ZLinkWorkHandle) => void} [options.onError]
   */
  constructor({ clock = performance, observer = null, onError = null } = {}) {
    this.clock = clock;
    this.observer = observer;
    this.onError = onError
      ?? ((error, work) => console.error(`work ${work.label} failed on ${work.queue.name}:`, error));
    this.postedDrains = 0;
  }

  /** Run `fn` on the next macrotask (SE-6.5): I/O and timers may run before it. */
  post(fn) {
    this.postedDrains += 1;
    setImmediate(() => {
      this.postedDrains -= 1;
      fn();
    });
  }
}

// --------------------------------------------------------------------------- works

const QUEUED = 'queued'; // waiting in a line, never started
const RUNNING = 'running'; // holds the turn
const SUSPENDED = 'suspended'; // gave the turn back; its external call is pending
const REQUEUED = 'requeued'; // its resume permit waits in a line
const DONE = 'done';

/** One accepted work: its place in its queue and, once it ended, its outcome. */
export class ZLinkWorkHandle {
  constructor(queue, work) {
    this.queue = queue; // the queue that accepted it
    this.work = work;
    this.label = ''; // a free-form name for logs and observers
    this.seq = -1; // sequence number of its current place in line
    this.lane = APPLICATION;
    this.barrier = false;
    this.nbytes = 0; // its reservation
    this.phase = QUEUED;
    this.permit = null; // set while a resume permit waits: resolving it resumes the work
    this.executionTurn = false; // a SpotWide turn: the work is counted by its Actor queue
    this.outcome = null; // 'completed' or 'failed' once ended (nothing is cancelled here)
    this.value = undefined; // its result or error
    this._waiters = [];
  }

  /** Resolves (never rejects) with the handle once the work has ended. */
  whenDone() {
    if (this.outcome !== null) return Promise.resolve(this);
    return new Promise((resolve) => this._waiters.push(resolve));
  }

  _settle(outcome, value) {
    this.outcome = outcome;
    this.value = value;
    this.work = null;
    for (const resolve of this._waiters.splice(0)) resolve(this);
  }
}

/**
 * What a running work receives as its argument: its owner's name and the one framework
 * call that gives the turn back while an external call is pending (SE-6.7).
 */
class ZLinkTurn {
  constructor(queue, rec) {
    this._queue = queue;
    this._rec = rec;
  }

  /** The name of the queue whose turn this work holds. */
  get owner() { return this._queue.name; }

  /**
   * Make a framework call: `start()` starts the external call and returns its result
   * (the call completed synchronously: no yield) or a promise (pending: the turn is
   * given back, and the work continues only after queueing again and getting its
   * turn). A failed call throws on the work's own turn.
   * @template T @param {() => T | Promise<T>} start @returns {Promise<T>}
   */
  yieldFrameworkCall(start) { return this._queue._yieldFrameworkCall(this._rec, start); }
}

const isThenable = (value) => value !== null && (typeof value === 'object' || typeof value === 'function')
  && typeof value.then === 'function';

function checkWork(work) {
  if (typeof work !== 'function') throw new TypeError(`work must be a function, got ${typeof work}`);
}

function checkPayload(payloadBytes) {
  if (!Number.isInteger(payloadBytes) || payloadBytes < 0) {
    throw new RangeError(`payloadBytes must be an integer >= 0, got ${payloadBytes} (SE-6.2)`);
  }
  return payloadBytes;
}

// ---------------------------------------------------------------- the queue primitive

/**
 * ZLinkSerialExecutionQueue: runs the works submitted to one owner one at a time
 * (SE-6). Two lanes (application, lifecycle) with count and byte capacity, plus the
 * barrier-next line; a drain started by whoever makes an idle queue busy; time-budget
 * slices; Yield.
 */
export class ZLinkSerialExecutionQueue {
  /**
   * @param {string} name the owner's name, as events and errors report it
   * @param {ReturnType<typeof lanePolicy>} policy
   * @param {ZLinkRuntime} runtime
   * @param {{yieldAllowed?: boolean}} [options] an Entry Spot's queues offer no Yield
   */
  constructor(name, policy, runtime, { yieldAllowed = true } = {}) {
    this.name = name;
    this.policy = policy;
    this._rt = runtime;
    this._yieldAllowed = yieldAllowed;
    this._lines = [[], [], []]; // indexed by APPLICATION, LIFECYCLE, BARRIER
    this._count = [0, 0]; // reserved per lane: accepted, unfinished works (D-9)
    this._bytes = [0, 0];
    this._nextSeq = 0;
    this._drainScheduled = false;
    this._draining = false;
    this._current = null; // the work holding the turn
    this._sliceStartedAt = 0;
    this._streak = 0;
    this._closed = false;
    this._executionTurns = 0; // live SpotWide execution turns (counted by their Actor)
    this._idleWaiters = [];
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

  /** No new submissions; accepted work still runs to its end. Idempotent. */
  close() {
    if (this._closed) return;
    this._closed = true;
    this._observe('close', null);
  }

  get closed() { return this._closed; }

  /** Accepted, unfinished works: queued, running, suspended and requeued (D-9). */
  get live() { return this._count[APPLICATION] + this._count[LIFECYCLE]; }

  /** Live works that this queue counts as its own (a SpotWide turn is its Actor's). */
  get active() { return this.live - this._executionTurns; }

  /** Reservations right now, per lane. */
  statistics() {
    return {
      applicationCount: this._count[APPLICATION],
      applicationBytes: this._bytes[APPLICATION],
      lifecycleCount: this._count[LIFECYCLE],
      lifecycleBytes: this._bytes[LIFECYCLE],
    };
  }

  // -------------------------------------------- for the coordinators of this module
  /** Place an execution turn of work that another queue already accepted (a SpotWide
   *  Actor's turn, SE-4.5, or a session's final work): reserves the fixed cost in the
   *  application lane and is never refused, not even after close (D-6). */
  _transfer(rec) {
    return this._place(rec, APPLICATION, this.policy.fixedWorkByteCost, false, 'transfer');
  }

  /** Call `fn` once no accepted work is left (at once if none is). */
  _whenIdle(fn) {
    if (this.live === 0) fn();
    else this._idleWaiters.push(fn);
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
    rec.seq = this._nextSeq++;
    rec.lane = lane;
    rec.barrier = barrier;
    rec.nbytes = nbytes;
    rec.phase = QUEUED;
    if (rec.executionTurn) this._executionTurns += 1;
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
      if (rec.permit !== null) {
        // A resume permit: the suspended work continues on its own (SE-6.7).
        const resume = rec.permit;
        rec.permit = null;
        resume();
        return;
      }
      let result;
      try {
        result = rec.work(new ZLinkTurn(this, rec));
      } catch (error) {
        [prev, outcome, value] = [rec, 'failed', error];
        continue;
      }
      if (!isThenable(result)) {
        [prev, outcome, value] = [rec, 'completed', result];
        continue;
      }
      // The work keeps the turn while it awaits anything but a framework call.
      result.then((v) => this._runTurns(rec, 'completed', v), (e) => this._runTurns(rec, 'failed', e));
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
    rec.phase = RUNNING;
    this._current = rec;
    this._observe('take_next', rec);
    return rec;
  }

  _finish(rec) {
    if (this._current !== rec) {
      throw new ZLinkProtocolError('finish', 'SE-6.7', `${this.name}: work ${rec.label} ends off its turn`);
    }
    this._current = null;
    // The reservation lives until the work ends, not until it starts (SE-5.2).
    rec.phase = DONE;
    this._count[rec.lane] -= 1;
    this._bytes[rec.lane] -= rec.nbytes;
    if (rec.executionTurn) this._executionTurns -= 1;
    this._observe('finish', rec);
  }

  _ended(rec, outcome, value) {
    rec._settle(outcome, value);
    if (outcome === 'failed') this._rt.onError(value, rec);
    if (this.live === 0) for (const fn of this._idleWaiters.splice(0)) fn();
  }

  // ---------------------------------------------------------------------- Yield
  async _yieldFrameworkCall(rec, start) {
    if (!this._yieldAllowed) {
      throw new ZLinkYieldNotSupportedError(`${this.name} offers no Yield (an Entry Spot has none, SE-4.1)`);
    }
    if (this._current !== rec) throw new ZLinkNotOnTurnError('yieldFrameworkCall outside its work\'s turn');
    const pending = start();
    if (!isThenable(pending)) return pending; // done already: go on without yielding
    // yield_turn: give the turn back; the work keeps its reservation (D-2). The drain
    // goes on without it in a posted callback, not on this work's stack.
    this._current = null;
    rec.phase = SUSPENDED;
    this._observe('yield_turn', rec);
    this._rt.post(() => this._runTurns(null));
    let failed = false;
    let result;
    try {
      result = await pending;
    } catch (error) {
      failed = true;
      result = error;
    }
    // requeue: the resume permit goes to the tail of the work's own lane with a fresh
    // sequence number, with no capacity check (D-1, D-2); the work continues only when
    // the drain gives the permit the turn: no resume skips the queue (SE-6.7).
    const permit = new Promise((resolve) => { rec.permit = resolve; });
    rec.seq = this._nextSeq++;
    rec.phase = REQUEUED;
    this._lines[rec.lane].push(rec);
    this._observe('requeue', rec);
    this._wake();
    await permit;
    if (failed) throw result;
    return result;
  }

  _observe(event, rec) {
    const observer = this._rt.observer;
    if (observer !== null) observer(event, this.name, rec);
  }
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
 * (SE-3.1):
 *
 *   entry            PerActor (User) / Entry     SpotWide (User) / Instance
 *   executeSpot      Spot queue                  Spot queue
 *   executeLifecycle Spot queue, lifecycle lane  Spot queue, lifecycle lane
 *   executeActor     that Actor's queue          Actor queue (claim, payload), then one
 *                                                execution turn on the Spot queue
 *   executeTimer     that timer's queue          Spot queue (no timer queue is made)
 */
export class ZLinkSpotSerialExecutor {
  /**
   * @param {string} spotId
   * @param {object} options
   * @param {'user'|'entry'|'instance'} [options.kind]
   * @param {'per_actor'|'spot_wide'} [options.mode] User Spots only, and required there
   * @param {ZLinkRuntime} options.runtime
   */
  constructor(spotId, { kind = 'user', mode, policy = lanePolicy(), actorPolicy = lanePolicy(),
    timerPolicy = lanePolicy(), runtime }) {
    checkId('spotId', spotId);
    if (!SPOT_KINDS.includes(kind)) throw new TypeError(`unknown Spot kind ${kind}`);
    if (kind === 'user' && !SPOT_MODES.includes(mode)) {
      throw new TypeError('a User Spot needs its execution mode (per_actor or spot_wide), fixed at '
        + 'registration (SE-1.2)');
    }
    if (kind !== 'user' && mode !== undefined) {
      throw new TypeError(`the execution mode is for User Spots only, not ${kind} (SE-4.1)`);
    }
    this.name = spotId;
    this._wide = kind === 'instance' || mode === 'spot_wide';
    this._queueOptions = { yieldAllowed: kind !== 'entry' };
    this._rt = runtime;
    this._actorPolicy = actorPolicy;
    this._timerPolicy = timerPolicy;
    this._spot = this._makeQueue(spotId, policy);
    this._actors = new Map();
    this._timers = new Map();
    this._closed = false;
  }

  /** Spot handler work, on the Spot queue. */
  executeSpot(work) {
    this._checkOpen();
    return this._spot.enqueue(work);
  }

  /** Join, leave or relocation, on the Spot queue's lifecycle lane. */
  executeLifecycle(work) {
    this._checkOpen();
    return this._spot.enqueueLifecycle(work);
  }

  /** One Actor handler work; the queue path follows the Spot's mode (SE-4). */
  executeActor(actorId, work, payloadBytes = 0) {
    this._checkOpen();
    checkId('actorId', actorId);
    checkWork(work);
    let queue = this._actors.get(actorId);
    if (queue === undefined) {
      queue = this._makeQueue(`${this.name}/actor:${actorId}`, this._actorPolicy);
      this._actors.set(actorId, queue);
    }
    if (!this._wide) return queue.enqueueWithPayloadBytes(work, payloadBytes);
    // SpotWide (SE-4.5, SE-4.6, SE-5.3): the Actor queue admits the work and reserves
    // its payload. On the Actor queue's turn, one execution turn (fixed cost only) is
    // placed on the Spot queue, and the Actor's turn is held until that work ends:
    // this held turn is the Actor's claim, kept while the work yields on the Spot.
    const spot = this._spot;
    const claim = queue.enqueueWithPayloadBytes(() => {
      const turn = new ZLinkWorkHandle(spot, work);
      turn.label = claim.label;
      turn.executionTurn = true;
      return spot._transfer(turn).whenDone().then(() => undefined);
    }, payloadBytes);
    return claim;
  }

  /** A timer callback: on its own timer queue, or straight on the Spot queue in
   *  SpotWide and Instance Spots (SE-4.4). */
  executeTimer(timerName, work) {
    this._checkOpen();
    checkId('timerName', timerName);
    if (this._wide) return this._spot.enqueue(work);
    let queue = this._timers.get(timerName);
    if (queue === undefined) {
      queue = this._makeQueue(`${this.name}/timer:${timerName}`, this._timerPolicy);
      this._timers.set(timerName, queue);
    }
    return queue.enqueue(work);
  }

  /** Remove the Spot: no new work on any entry, every queue closed; accepted work
   *  still runs to its end. */
  close() {
    this._closed = true;
    for (const queue of this.queues()) queue.close();
  }

  /** Every queue this Spot made: the Spot queue, then Actor and timer queues. */
  queues() { return [this._spot, ...this._actors.values(), ...this._timers.values()]; }

  _makeQueue(name, policy) {
    return new ZLinkSerialExecutionQueue(name, policy, this._rt, this._queueOptions);
  }

  _checkOpen() {
    if (this._closed) throw new ZLinkClosedError(this.name);
  }
}

/** ZLinkActorSerialExecutor: one per Actor; exactly one queue, no map (SE-2.3). */
export class ZLinkActorSerialExecutor {
  constructor(actorId, { policy = lanePolicy(), runtime }) {
    checkId('actorId', actorId);
    this.name = actorId;
    this._queue = new ZLinkSerialExecutionQueue(actorId, policy, runtime);
  }

  /** One handler work, application lane, payload reserved. */
  executeActor(work, payloadBytes = 0) { return this._queue.enqueueWithPayloadBytes(work, payloadBytes); }

  /** The Actor's lifecycle control, lifecycle lane. */
  executeLifecycle(work) { return this._queue.enqueueLifecycle(work); }

  close() { this._queue.close(); }

  queues() { return [this._queue]; }
}

/**
 * ZLinkSessionSerialExecutor: one per STREAM session; exactly one queue (SE-2.3).
 * Lanes as in D-12: packets use the application lane and reserve their payload;
 * control and infrastructure work use the lifecycle lane, so they overtake a backlog of
 * packets and keep their order among themselves. executeFinal closes the session at
 * once and runs its work after every work accepted before it has ended.
 */
export class ZLinkSessionSerialExecutor {
  constructor(sessionId, { policy = lanePolicy(), runtime }) {
    checkId('sessionId', sessionId);
    this.name = sessionId;
    this._queue = new ZLinkSerialExecutionQueue(sessionId, policy, runtime);
    this._closed = false;
  }

  executeApplication(work, payloadBytes = 0) {
    this._checkOpen();
    return this._queue.enqueueWithPayloadBytes(work, payloadBytes);
  }

  executeControl(work) {
    this._checkOpen();
    return this._queue.enqueueLifecycle(work);
  }

  executeInfrastructure(work) {
    this._checkOpen();
    return this._queue.enqueueLifecycle(work);
  }

  /** The last work of the session: accepted now, placed (never refused, D-6) once every
   *  work accepted before it has ended, yielded ones included; nothing comes after. */
  executeFinal(work) {
    this._checkOpen();
    checkWork(work);
    this._closed = true;
    const queue = this._queue;
    queue.close();
    const final = new ZLinkWorkHandle(queue, work);
    queue._whenIdle(() => queue._transfer(final));
    return final;
  }

  close() {
    this._closed = true;
    this._queue.close();
  }

  queues() { return [this._queue]; }

  _checkOpen() {
    if (this._closed) throw new ZLinkClosedError(this.name);
  }
}
