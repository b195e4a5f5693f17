#!/usr/bin/env node
// The conformance adapter of the Node.js example runtime (executor.js).
//
// It reads commands as JSON Lines on stdin and writes replies and events on stdout
// (specs/adapter-protocol.md); its log goes to stderr. Run the suite against it with
//
//   zlink conformance run --adapter "node conformance/examples/node/adapter.js"
//
// How it keeps the protocol's promises:
// * One case, one runtime, one virtual clock. `reset` drops every target, work, gate and
//   call and makes a fresh ZLinkRuntime whose clock moves only on `advance` and `busy`.
// * Events are written the moment they happen, from the code that makes them happen:
//   `accepted`/`rejected` by `submit` before its reply; `started`, `resumed`,
//   `finished`, `failed`, `cancelled` by the work itself, on its turn; `yielded` by the
//   runtime's observer at the moment the turn is given back; `cancelled` of a work that
//   never started by its handle's onDone callback, when the disposal ends it. Owners
//   come from the queue that runs the work (turn.owner), not from the routing table, so
//   the runner's routing check checks the runtime.
// * `settle` answers once nothing can progress: no callback the runtime posted (a drain,
//   or a timer that came due) is still waiting to run, checked from a fresh macrotask
//   (so every promise continuation that was ready has run by then). See settle() below.
// * The runtime progresses between commands as Node's event loop lets it; cases never
//   depend on how far it gets before a `settle`.

import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import {
  lanePolicy,
  ZLinkActorSerialExecutor,
  ZLinkNotDisposedError,
  ZLinkReentrancyError,
  ZLinkRejectedError,
  ZLinkRuntime,
  ZLinkSerialExecutionQueue,
  ZLinkSessionSerialExecutor,
  ZLinkSpotSerialExecutor,
  ZLinkYieldNotSupportedError,
} from './executor.js';

const PROTOCOL_VERSION = 1;
const RUNTIME = { name: 'zlink-node-example', version: '0.2.0', language: `node ${process.versions.node}` };

// Everything the protocol defines, each implemented below and by executor.js.
const CAPABILITIES = [
  'actor',
  'await_after_dispose_safely',
  'concurrent_submission',
  'disposal',
  'member_listing',
  'queue',
  'queue_observation',
  'reentrancy_detection',
  'runtime_end',
  'scope_wait',
  'session',
  'single_execution_resource',
  'snapshots',
  'spot.entry',
  'spot.instance',
  'spot.user.per_actor',
  'spot.user.spot_wide',
  'statistics',
  'submitter_stack',
  'synchronous_wait',
  'virtual_clock',
  'yield',
  'zombie_listing',
  'zombie_warning',
];

const NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

// How many entry calls of the runtime are on the stack now (a work's code that begins
// while this is not zero began on the submitter's stack: SE-6.5 forbids it, and the
// `started` event says so). Node runs one thread, so one counter is the thread's.
let submitting = 0;
const POLICY_FIELDS = {
  application_message_capacity: 'applicationMessageCapacity',
  application_byte_capacity: 'applicationByteCapacity',
  lifecycle_message_capacity: 'lifecycleMessageCapacity',
  lifecycle_byte_capacity: 'lifecycleByteCapacity',
  fixed_work_byte_cost: 'fixedWorkByteCost',
  lifecycle_burst_limit: 'lifecycleBurstLimit',
  owner_time_budget_ms: 'ownerTimeBudgetMs',
};
// A settle that has waited this many macrotasks gives up: the runtime is livelocked.
const SETTLE_TURNS = 100_000;
// submit_concurrent: the protocol's bounds on how many submissions race at once.
const CONCURRENT_MIN = 2;
const CONCURRENT_MAX = 16;
// The runtime's work phases in the protocol's zombie states.
const ZOMBIE_STATES = { queued: 'queued', running: 'running', suspended: 'yielded', requeued: 'yielded' };
// A handle's outcome in the protocol's `waited` outcomes.
const OUTCOMES = { completed: 'finished', failed: 'failed', cancelled: 'cancelled' };

/** A command this adapter refuses; becomes `{"ok": false, "error": {kind, message}}`. */
class CommandError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

const bad = (message) => new CommandError('bad_command', message);

/** Thrown inside a work by the `raise` op or a failed external call. */
class ScriptError extends Error {}

// ------------------------------------------------------------------------- output

function write(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function log(text) {
  process.stderr.write(`[node-adapter] ${text}\n`);
}

// ----------------------------------------------------------- case-side test doubles

/** The runtime's clock for a case: integer milliseconds that move only when told.
 *  Timers that come due on `advance` are called in due order; the runtime's callback
 *  only posts the real work (ZLinkRuntime.callLater), so nothing runs on the stack of
 *  the work whose `busy` op moved the clock. */
class VirtualClock {
  ms = 0;
  #timers = []; // [due, order, callback, cancelled], kept sorted by due then order
  #order = 0;

  now() { return this.ms; }

  advance(ms) {
    this.ms += ms;
    while (this.#timers.length > 0 && this.#timers[0].due <= this.ms) {
      const timer = this.#timers.shift();
      if (!timer.cancelled) timer.callback();
    }
  }

  callLater(ms, callback) {
    const timer = { due: this.ms + ms, order: this.#order++, callback, cancelled: false };
    if (ms <= 0) {
      callback();
    } else {
      this.#timers.push(timer);
      this.#timers.sort((a, b) => a.due - b.due || a.order - b.order);
    }
    return { cancel: () => { timer.cancelled = true; } };
  }
}

/** A latch a work waits at, holding its turn, until the runner opens it. */
class Gate {
  isOpen = false;
  constructor() { this.opened = new Promise((resolve) => { this._open = resolve; }); }
  open() {
    this.isOpen = true;
    this._open();
  }
}

/** An external call the runner completes or fails; a disposal may cut it short. */
class ExternalCall {
  state = 'pending';
  constructor() {
    this.settled = new Promise((resolve, reject) => { this._resolve = resolve; this._reject = reject; });
    this.settled.catch(() => {}); // a failure nobody waits for is not an unhandled rejection
  }
  complete() {
    this.state = 'completed';
    this._resolve();
  }
  fail(message) {
    this.state = 'failed';
    this.message = message;
    this._reject(new ScriptError(message));
  }
  /** What a work's framework call starts: done already (a value, or a throw) or a
   *  promise that the runner settles later. The work's signal cuts a pending call short
   *  when the work is cancelled (D-15); the runner then hears `cancelled` from it. */
  start(signal) {
    if (this.state === 'completed') return undefined;
    if (this.state === 'failed') throw new ScriptError(this.message);
    if (this.state === 'pending') {
      signal.addEventListener('abort', () => {
        if (this.state === 'pending') this.state = 'cancelled';
      }, { once: true });
    }
    return this.settled;
  }
}

/** Resolves with `promise`, or rejects with the signal's reason once it is aborted:
 *  how a script's waits let a cancellation through. */
function cancellable(promise, signal) {
  if (signal.aborted) {
    // The promise is abandoned, not awaited: its own later rejection (a refused wait,
    // SE-8.2) belongs to nobody and is no fault of the runtime's.
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  let stop;
  const aborted = new Promise((_, reject) => {
    stop = () => reject(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
  });
  return Promise.race([promise, aborted]).finally(() => signal.removeEventListener('abort', stop));
}

// -------------------------------------------------------------------- entry points

// How each protocol entry calls the runtime, per target type (the routing itself is the
// runtime's: nothing here picks a queue).
const ENTRIES = {
  spot: {
    execute_spot: (spot, work) => spot.executeSpot(work),
    execute_actor: (spot, work, sub) =>
      spot.executeActor(need(sub, 'actor_id'), work, sub.payload_bytes ?? 0),
    execute_timer: (spot, work, sub) => spot.executeTimer(need(sub, 'timer_name'), work),
    execute_lifecycle: (spot, work) => spot.executeLifecycle(work),
  },
  actor: {
    execute_actor: (actor, work, sub) => actor.executeActor(work, sub.payload_bytes ?? 0),
    execute_lifecycle: (actor, work) => actor.executeLifecycle(work),
  },
  session: {
    execute_application: (session, work, sub) => session.executeApplication(work, sub.payload_bytes ?? 0),
    execute_control: (session, work) => session.executeControl(work),
    execute_infrastructure: (session, work) => session.executeInfrastructure(work),
    execute_final: (session, work) => session.executeFinal(work),
  },
  queue: {
    enqueue: (queue, work) => queue.enqueue(work),
    enqueue_with_payload_bytes: (queue, work, sub) =>
      queue.enqueueWithPayloadBytes(work, need(sub, 'payload_bytes')),
    enqueue_lifecycle: (queue, work) => queue.enqueueLifecycle(work),
    enqueue_barrier_next: (queue, work) => queue.enqueueBarrierNext(work),
  },
};

const COORDINATORS = {
  spot: ZLinkSpotSerialExecutor, actor: ZLinkActorSerialExecutor, session: ZLinkSessionSerialExecutor,
};

function need(fields, key) {
  if (fields[key] === undefined) throw bad(`the submission needs ${key}`);
  return fields[key];
}

function nameOf(fields, key) {
  const value = fields[key];
  if (typeof value !== 'string' || !NAME.test(value)) {
    const what = fields.cmd ?? fields.op ?? 'command';
    throw bad(`${what} needs a valid ${key} name, got ${JSON.stringify(value)}`);
  }
  return value;
}

function valuesOf(cmd) {
  const values = cmd.values ?? {};
  if (typeof values !== 'object' || values === null || Array.isArray(values)) throw bad('values must be an object');
  return values;
}

const snakeCase = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The handshake's surface, read from the coordinator classes themselves: each
 *  execute* method and its parameter names, in the protocol's snake_case spelling. A
 *  parameter that let a caller pick a queue would show up here (SE-10.1). */
function surface() {
  const out = {};
  for (const [type, cls] of Object.entries(COORDINATORS)) {
    out[type] = {};
    const methods = Object.getOwnPropertyNames(cls.prototype).filter((m) => m.startsWith('execute'));
    for (const method of methods.sort()) {
      const source = cls.prototype[method].toString();
      const params = source.slice(source.indexOf('(') + 1, source.indexOf(')')).split(',')
        .map((p) => p.split('=')[0].trim()).filter(Boolean);
      out[type][snakeCase(method)] = params.map(snakeCase);
    }
  }
  return out;
}

/**
 * The handshake's members (SE-2.5): every public member of each coordinator beyond its
 * entry points, and whether it hands out one of the coordinator's queues. JavaScript
 * has no declared result types to read, so this looks at what the members really give:
 * on a probe coordinator (with an Actor and a timer queue made, so maps are not empty)
 * it reads every public field and getter, and calls every public method, on a fresh
 * probe each time so that one member's effect (close, dispose) cannot hide another's
 * result; a method that refuses to be called without arguments is tried with one id.
 * Anything that is, or holds, a ZLinkSerialExecutionQueue counts as a queue; a promise
 * counts by what it resolves to. Private (#) fields are invisible by construction.
 */
async function members() {
  const probe = (type) => {
    const runtime = new ZLinkRuntime({ clock: new VirtualClock(), onError: () => {}, onZombieWarning: () => {} });
    const obj = type === 'spot'
      ? new ZLinkSpotSerialExecutor('probe', { mode: 'per_actor', runtime })
      : new COORDINATORS[type]('probe', { runtime });
    if (type === 'spot') {
      obj.executeActor('probe', () => {});
      obj.executeTimer('probe', () => {});
    }
    return obj;
  };
  const holdsQueue = (value) => {
    if (value instanceof ZLinkSerialExecutionQueue) return true;
    let items = [];
    if (Array.isArray(value) || value instanceof Set) items = [...value];
    else if (value instanceof Map) items = [...value.keys(), ...value.values()];
    else if (typeof value === 'object' && value !== null) items = Object.values(value);
    return items.some((item) => item instanceof ZLinkSerialExecutionQueue);
  };
  // What the member gives: a field's or getter's value, or a method's result; the
  // error, if reading or calling it throws.
  const give = (obj, name, args) => {
    try {
      const value = obj[name];
      return typeof value === 'function' ? value.apply(obj, args) : value;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  };
  const out = {};
  for (const [type, cls] of Object.entries(COORDINATORS)) {
    const names = new Set(Object.keys(probe(type)));
    for (let proto = cls.prototype; proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const name of Object.getOwnPropertyNames(proto)) names.add(name);
    }
    const found = {};
    for (const name of [...names].sort()) {
      if (name === 'constructor' || name.startsWith('_') || name.startsWith('execute')) continue;
      let value = give(probe(type), name, []);
      if (value instanceof Error) value = give(probe(type), name, ['probe']);
      if (value !== null && typeof value?.then === 'function') {
        value = await Promise.race([
          Promise.resolve(value).catch(() => undefined),
          new Promise((resolve) => { setImmediate(() => setImmediate(() => resolve(undefined))); }),
        ]);
      }
      found[name] = holdsQueue(value) ? 'queue' : 'other';
    }
    out[type] = found;
  }
  return out;
}

// A submitting thread of submit_concurrent. Each one waits at a barrier (a shared
// counter) until every thread is running, then hands its submission to the runtime's
// thread, the only one that changes a queue (D-7), exactly as a Node program's worker
// threads submit: by message. Which thread's message arrives first is the race.
const SUBMITTER = `
const { parentPort, workerData } = require('node:worker_threads');
const { arrived, count, submission } = workerData;
Atomics.add(arrived, 0, 1);
Atomics.notify(arrived, 0);
for (let seen = Atomics.load(arrived, 0); seen < count; seen = Atomics.load(arrived, 0)) {
  Atomics.wait(arrived, 0, seen);
}
parentPort.postMessage(submission);
`;

// ---------------------------------------------------------------------------- case

/** Everything one case made; `reset` drops it and starts a new one. */
class Case {
  constructor() {
    this.live = true;
    this.clock = new VirtualClock();
    this.runtime = new ZLinkRuntime({
      clock: this.clock,
      observer: (event, owner, work) => this.observe(event, owner, work),
      // A failing work reports `failed` itself, from its own code; nothing to add.
      onError: () => {},
      onZombieWarning: (zombie) => this.zombieWarning(zombie),
    });
    this.targets = new Map(); // name -> {name, type, obj}
    this.works = new Map(); // name -> {id, handle, started, ended, admitOwner, owner, pendingCall, yielded}
    this.gates = new Map();
    this.calls = new Map();
    this.waiters = new Set();
    this.zombiesSeen = new Set();
  }

  /** Write an event, unless this case was dropped (a work of an old case never
   *  speaks into the next one). */
  emit(event, fields) {
    if (this.live) write({ event, ...fields });
  }

  /** The runtime's observer: `yielded` is written at the moment the turn is given
   *  back, while no other work can have taken it yet. */
  observe(event, owner, work) {
    if (process.env.ZLINK_NODE_TRACE) log(`trace ${owner} ${event}${work ? ` ${work.label}` : ''}`);
    if (event !== 'yield_turn') return;
    const ws = this.works.get(work.label);
    if (ws === undefined || ws.pendingCall === null) return;
    ws.yielded = true;
    this.emit('yielded', { work: ws.id, owner, call: ws.pendingCall });
  }

  /** The runtime's SD-6 hook: a zombie outlived its scope's threshold. */
  zombieWarning(zombie) {
    log(`zombie ${zombie.label} of ${zombie.owner} still ${zombie.state} after ${this.clock.now() - zombie.since} ms`);
    const ws = this.works.get(zombie.label);
    if (ws !== undefined) this.emit('zombie_warning', { work: ws.id, owner: ws.started ? ws.owner : ws.admitOwner });
  }

  target(name) {
    const target = typeof name === 'string' ? this.targets.get(name) : undefined;
    if (target === undefined) {
      throw new CommandError('unknown_target', `no target named ${JSON.stringify(name)}`);
    }
    return target;
  }

  gate(name) {
    if (!this.gates.has(name)) this.gates.set(name, new Gate());
    return this.gates.get(name);
  }

  call(name) {
    if (!this.calls.has(name)) this.calls.set(name, new ExternalCall());
    return this.calls.get(name);
  }

  // ---------------------------------------------------------------- submission
  /** Submit one work (from the `submit` command, a work's `submit` op or a thread of
   *  `submit_concurrent`); the verdict is written as an event before anything else
   *  about the work. With a `latch`, the work waits for it before it starts. */
  submit(sub, latch = null) {
    const id = nameOf(sub, 'work');
    if (this.works.has(id)) throw bad(`work ${id} was submitted already`);
    const target = this.target(sub.target);
    const entry = ENTRIES[target.type][sub.entry];
    if (entry === undefined) throw bad(`a ${target.type} has no entry ${JSON.stringify(sub.entry)}`);
    const script = sub.script ?? [];
    checkScript(script);
    const ws = {
      id, handle: null, started: false, ended: false, admitOwner: target.name, target: target.name, owner: target.name,
      pendingCall: null, yielded: false,
    };
    let handle;
    submitting += 1;
    try {
      handle = entry(target.obj, this.workFor(ws, script, latch), sub);
    } catch (error) {
      if (error instanceof ZLinkRejectedError) {
        ws.ended = true;
        this.works.set(id, ws);
        this.emit('rejected', { work: id, owner: error.owner, reason: error.reason });
        return 'rejected';
      }
      if (error instanceof TypeError || error instanceof RangeError) throw bad(error.message);
      throw error;
    } finally {
      submitting -= 1;
    }
    handle.label = id;
    ws.handle = handle;
    ws.admitOwner = ws.owner = handle.owner;
    this.works.set(id, ws);
    this.emit('accepted', { work: id, owner: ws.admitOwner });
    // A work that ends without its code reporting it (cancelled before it started, by
    // a disposal) is reported here, on the queue that admitted it.
    handle.onDone((ended) => this.reportEnd(ws, ended));
    return 'accepted';
  }

  reportEnd(ws, handle) {
    if (ws.ended) return;
    ws.ended = true;
    const owner = ws.started ? ws.owner : ws.admitOwner;
    if (handle.outcome === 'cancelled') this.emit('cancelled', { work: ws.id, owner });
    else if (handle.outcome === 'failed') this.emit('failed', { work: ws.id, owner, message: String(handle.value) });
    else this.emit('finished', { work: ws.id, owner });
  }

  /** The function the runtime runs for a script. Without a gate, call or wait_for op it
   *  never waits, so it is a plain synchronous function (a synchronous turn); otherwise
   *  async. */
  workFor(ws, script, latch) {
    const begin = (turn, inline) => {
      ws.started = true;
      ws.owner = turn.owner;
      this.emit('started', { work: ws.id, owner: ws.owner, on_submitter_stack: inline });
    };
    const end = (error) => {
      if (ws.ended) return;
      ws.ended = true;
      if (error === undefined) {
        this.emit('finished', { work: ws.id, owner: ws.owner });
        return;
      }
      if (error?.name === 'ZLinkCancelledError') {
        this.emit('cancelled', { work: ws.id, owner: ws.owner });
        return;
      }
      const scripted = error instanceof ScriptError;
      if (!scripted) log(`work ${ws.id}: ${error?.stack ?? error}`);
      this.emit('failed', { work: ws.id, owner: ws.owner, message: scripted ? error.message : String(error) });
    };
    const waits = script.some((op) => ['gate', 'call', 'wait_for', 'await_scope'].includes(op.op));
    if (!waits && latch === null) {
      return (turn) => {
        begin(turn, submitting > 0);
        try {
          script.forEach((op, index) => this.runOp(ws, turn, index, op));
        } catch (error) {
          end(error);
          throw error;
        }
        end();
      };
    }
    return async (turn) => {
      const inline = submitting > 0; // read before the first await: where the code began
      if (latch !== null && !inline) await latch;
      begin(turn, inline);
      try {
        for (const [index, op] of script.entries()) {
          if (op.op === 'gate') await this.runGate(turn, op);
          else if (op.op === 'call') await this.runCall(ws, turn, index, op.call);
          else if (op.op === 'wait_for') await this.runWaitFor(ws, turn, index, op.work, op.wrapped === true);
          else if (op.op === 'await_scope') await this.runAwaitScope(ws, index, op.mode);
          else this.runOp(ws, turn, index, op);
        }
      } catch (error) {
        end(error);
        throw error;
      }
      end();
    };
  }

  runOp(ws, turn, index, op) {
    switch (op.op) {
      case 'busy':
        this.clock.advance(op.ms);
        return;
      case 'raise':
        throw new ScriptError(op.message);
      case 'is_current': {
        const target = this.target(op.target);
        if (target.type !== 'queue') throw new ScriptError(`is_current asks a bare queue, not a ${target.type}`);
        this.emit('current', { work: ws.id, owner: ws.owner, target: target.name, current: target.obj.isCurrent() });
        return;
      }
      case 'snapshot':
        this.emit('snapshot', { work: ws.id, owner: ws.owner, values: { ...(turn.snapshot?.values ?? {}) } });
        return;
      case 'submit':
        try {
          this.submit(op);
        } catch (error) {
          if (!(error instanceof CommandError)) throw error;
          log(`work ${ws.id} op ${index}: ${error.message}`);
          this.emit('error', { work: ws.id, owner: ws.owner, op: index, kind: 'other' });
        }
        return;
      default:
        throw new ScriptError(`op ${op.op} cannot run here`); // checkScript keeps this unreachable
    }
  }

  /** The `gate` op: wait, holding the turn, until the gate opens. A cancellation ends
   *  the wait, unless the op ignores it (a turn that cannot be interrupted): then the
   *  work waits on and goes on normally. */
  runGate(turn, op) {
    const gate = this.gate(op.gate);
    if (op.ignore_cancel) return gate.opened;
    return cancellable(gate.opened, turn.signal);
  }

  /** The `call` op: a framework call on the named external call (SE-6.7). */
  async runCall(ws, turn, index, name) {
    const call = this.call(name);
    ws.pendingCall = name;
    try {
      await turn.yieldFrameworkCall((signal) => call.start(signal));
    } catch (error) {
      if (!(error instanceof ZLinkYieldNotSupportedError)) throw error;
      this.emit('error', { work: ws.id, owner: ws.owner, op: index, kind: 'yield_not_supported' });
    } finally {
      ws.pendingCall = null;
      if (ws.yielded) { // it gave its turn back and now holds it again
        ws.yielded = false;
        this.emit('resumed', { work: ws.id, owner: ws.owner });
      }
    }
  }

  /** The `wait_for` op: wait, holding the turn, for another work to end. The runtime
   *  refuses at once a wait that could never end (SE-8.2). */
  async runWaitFor(ws, turn, index, name, wrapped) {
    const other = this.works.get(name);
    if (other === undefined || other.handle === null) {
      log(`work ${ws.id} op ${index}: no accepted work named ${JSON.stringify(name)}`);
      this.emit('error', { work: ws.id, owner: ws.owner, op: index, kind: 'other' });
      return;
    }
    let ended;
    try {
      // Wrapped: as users write it, the wait starts a step later in a promise of its own,
      // raced against a timeout far beyond any case.
      const wait = wrapped ? withTimeout((async () => { await null; return other.handle.whenDone(); })())
        : other.handle.whenDone();
      ended = await cancellable(wait, turn.signal);
    } catch (error) {
      if (!(error instanceof ZLinkReentrancyError)) throw error;
      log(`work ${ws.id} op ${index}: ${error.message}`);
      this.emit('error', { work: ws.id, owner: ws.owner, op: index, kind: 'reentrancy' });
      return;
    }
    this.emit('waited', { work: ws.id, owner: ws.owner, target: name, outcome: OUTCOMES[ended.outcome] });
  }

  /** The `await_scope` op: await the work's own target's quiescence, completion or
   *  after-cancellation from inside the work. Each waits for the waiter itself, so the
   *  runtime refuses it at once (SE-8.2, SE-10.13); a wait that returns reports nothing. */
  async runAwaitScope(ws, index, mode) {
    const obj = this.target(ws.target).obj;
    try {
      // Not raced against the work's cancellation: a zombie asks too (after_cancellation
      // waits for zombies), and a wait the runtime does not refuse must show as a hang.
      if (mode === 'quiescence') await obj.awaitQuiescence();
      else if (mode === 'completion') await obj.awaitCompletion();
      else await obj.awaitAfterCancellation(() => {});
    } catch (error) {
      let kind;
      if (error instanceof ZLinkReentrancyError) kind = 'reentrancy';
      else if (error instanceof ZLinkNotDisposedError) kind = 'not_disposed';
      else throw error;
      log(`work ${ws.id} op ${index}: ${error.message}`);
      this.emit('error', { work: ws.id, owner: ws.owner, op: index, kind });
    }
  }
}

/** `promise`, or a rejection after an hour: the timeout a user wraps around a wait. */
function withTimeout(promise) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('wait timed out')), 3_600_000);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Refuse a script this adapter cannot run before anything is submitted. */
function checkScript(script) {
  if (!Array.isArray(script)) throw bad('script must be a list of ops');
  for (const op of script) {
    if (typeof op !== 'object' || op === null) throw bad('a script op must be an object');
    if (op.op === 'gate') nameOf(op, 'gate');
    else if (op.op === 'call') nameOf(op, 'call');
    else if (op.op === 'wait_for') nameOf(op, 'work');
    else if (op.op === 'is_current') nameOf(op, 'target');
    else if (op.op === 'await_scope') {
      if (!['quiescence', 'completion', 'after_cancellation'].includes(op.mode)) throw bad('await_scope needs a mode');
    }
    else if (op.op === 'busy') checkMs(op.ms);
    else if (op.op === 'raise') {
      if (typeof op.message !== 'string') throw bad('raise needs a message');
    } else if (op.op === 'submit') checkScript(op.script ?? []);
    else if (op.op !== 'snapshot') throw bad(`unknown op ${JSON.stringify(op.op)}`);
  }
}

function checkMs(ms) {
  if (!Number.isInteger(ms) || ms < 0) throw bad(`ms must be an integer >= 0, got ${JSON.stringify(ms)}`);
  return ms;
}

function policyFrom(data, what) {
  if (data === undefined) return lanePolicy();
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw bad(`${what} must be an object`);
  const fields = {};
  for (const [key, value] of Object.entries(data)) {
    if (!Object.hasOwn(POLICY_FIELDS, key)) throw bad(`${what}: unknown field ${key}`);
    fields[POLICY_FIELDS[key]] = value;
  }
  try {
    return lanePolicy(fields);
  } catch (error) {
    throw bad(`${what}: ${error.message}`);
  }
}

/** Runtime errors of a command's arguments become `bad_command` replies. */
function asCommand(fn) {
  try {
    return fn();
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw bad(error.message);
    throw error;
  }
}

/** Work labels in order, each once: what `returned` reports. */
const labels = (zombies) => [...new Set(zombies.map((z) => z.label).filter(Boolean))];

// ------------------------------------------------------------------------ commands

class Adapter {
  greeted = false;
  case = new Case();

  /** Carry out one command; returns the reply's fields (a promise for `hello`,
   *  `settle` and `submit_concurrent`). */
  run(cmd) {
    const name = cmd.cmd;
    if (name === 'hello') return this.hello(cmd);
    if (!this.greeted) throw bad('the first command must be hello');
    if (name === 'shutdown') return {};
    if (name === 'reset') {
      this.case.live = false;
      this.case = new Case();
      return {};
    }
    if (!Object.hasOwn(COMMANDS, name)) throw bad(`unknown command ${JSON.stringify(name)}`);
    return COMMANDS[name](this.case, cmd);
  }

  async hello(cmd) {
    if (cmd.protocol !== PROTOCOL_VERSION) {
      const asked = JSON.stringify(cmd.protocol);
      throw new CommandError('unsupported', `this adapter speaks protocol ${PROTOCOL_VERSION}, not ${asked}`);
    }
    this.greeted = true;
    return {
      protocol: PROTOCOL_VERSION, runtime: RUNTIME, capabilities: CAPABILITIES, surface: surface(),
      members: await members(),
    };
  }
}

const COMMANDS = {
  create(c, cmd) {
    const name = nameOf(cmd, 'target');
    if (c.targets.has(name)) throw bad(`target ${name} exists`);
    const policy = policyFrom(cmd.policy, 'policy');
    const runtime = c.runtime;
    const zombieWarnAfterMs = cmd.zombie_warn_after_ms;
    const obj = asCommand(() => {
      switch (cmd.type) {
        case 'spot':
          return new ZLinkSpotSerialExecutor(name, {
            kind: cmd.kind ?? 'user', mode: cmd.mode, policy, runtime, zombieWarnAfterMs,
            actorPolicy: policyFrom(cmd.actor_policy, 'actor_policy'),
            timerPolicy: policyFrom(cmd.timer_policy, 'timer_policy'),
          });
        case 'actor':
          return new ZLinkActorSerialExecutor(name, {
            policy, runtime, zombieWarnAfterMs, actorType: cmd.actor_type ?? null,
          });
        case 'session':
          return new ZLinkSessionSerialExecutor(name, { policy, runtime, zombieWarnAfterMs });
        case 'queue':
          return new ZLinkSerialExecutionQueue(name, policy, runtime, { zombieWarnAfterMs });
        default:
          throw bad(`unknown target type ${JSON.stringify(cmd.type)}`);
      }
    });
    c.targets.set(name, { name, type: cmd.type, obj });
    return {};
  },

  submit(c, cmd) {
    return { verdict: c.submit(cmd) };
  },

  /**
   * Submit every submission at once, each from its own OS thread (a worker thread).
   * The threads start together at a barrier and post their submissions; this thread,
   * the only one that changes the runtime, admits each as it arrives, so a capacity
   * check and its insertion stay one step whatever the race (SE-6.3). The works wait at
   * a latch that opens once every verdict is written, so no `started` comes before an
   * `accepted`.
   */
  submit_concurrent(c, cmd) {
    const subs = cmd.submissions;
    if (!Array.isArray(subs) || subs.length < CONCURRENT_MIN || subs.length > CONCURRENT_MAX
      || !subs.every((sub) => typeof sub === 'object' && sub !== null && !Array.isArray(sub))) {
      throw bad(`submissions must be a list of ${CONCURRENT_MIN} to ${CONCURRENT_MAX} submission objects`);
    }
    let openLatch;
    const latch = new Promise((resolve) => { openLatch = resolve; });
    const arrived = new Int32Array(new SharedArrayBuffer(4));
    const errors = [];
    const handed = subs.map((submission) => new Promise((resolve) => {
      const worker = new Worker(SUBMITTER, { eval: true, workerData: { arrived, count: subs.length, submission } });
      let done = false;
      worker.on('message', (sub) => {
        done = true;
        try {
          c.submit(sub, latch);
        } catch (error) {
          errors.push(error instanceof CommandError ? error : new CommandError('internal', String(error)));
        }
        resolve();
      });
      const lost = (why) => {
        if (done) return;
        done = true;
        errors.push(new CommandError('internal', `a submitting thread ended without submitting: ${why}`));
        resolve();
      };
      worker.on('error', (error) => lost(error.message));
      worker.on('exit', (code) => lost(`exit code ${code}`));
    }));
    return Promise.all(handed).then(() => {
      openLatch();
      if (errors.length > 0) throw errors[0];
      return {};
    });
  },

  open(c, cmd) {
    c.gate(nameOf(cmd, 'gate')).open();
    return {};
  },

  complete(c, cmd) {
    const call = c.call(nameOf(cmd, 'call'));
    if (call.state === 'cancelled') return { state: 'cancelled' }; // cut short by a disposal (D-15)
    if (call.state !== 'pending') throw bad(`call ${cmd.call} was already ${call.state}`);
    call.complete();
    return { state: 'completed' };
  },

  fail(c, cmd) {
    const call = c.call(nameOf(cmd, 'call'));
    if (call.state === 'cancelled') return { state: 'cancelled' };
    if (call.state !== 'pending') throw bad(`call ${cmd.call} was already ${call.state}`);
    call.fail(typeof cmd.message === 'string' ? cmd.message : 'external call failed');
    return { state: 'failed' };
  },

  advance(c, cmd) {
    // Timers that came due (disposal timeouts, zombie warnings, the runtime end's grace
    // period) are posted; settle waits for them like for a drain.
    c.clock.advance(checkMs(cmd.ms));
    return { now_ms: c.clock.now() };
  },

  register(c, cmd) {
    const { obj, type } = c.target(cmd.target);
    const values = valuesOf(cmd);
    asCommand(() => {
      if (type === 'spot') obj.registerActor(nameOf(cmd, 'actor_id'), cmd.actor_type ?? null, values);
      else if (type === 'actor') obj.register(values, cmd.actor_type ?? undefined);
      else throw bad(`a ${type} has no Actor registrations`);
    });
    return {};
  },

  update_registration(c, cmd) {
    const { obj, type } = c.target(cmd.target);
    const values = valuesOf(cmd);
    asCommand(() => {
      if (type === 'spot') obj.updateActorRegistration(nameOf(cmd, 'actor_id'), values);
      else if (type === 'actor') obj.updateRegistration(values);
      else throw bad(`a ${type} has no Actor registrations`);
    });
    return {};
  },

  /**
   * Answer once nothing can progress without further input. Every step of this
   * runtime is either a callback it posted with setImmediate (a drain, or a timer of
   * the virtual clock that came due; counted by runtime.postedDrains) or a promise
   * continuation (a microtask). Node runs every ready microtask before the next
   * macrotask, so a check made from a fresh setImmediate that finds no posted callback
   * left sees a runtime where every work is finished, at a shut gate, yielded on a
   * pending call, waiting for such a work, or queued behind one of those.
   */
  settle(c) {
    return new Promise((resolve, reject) => {
      let turns = 0;
      const check = () => {
        if (c.runtime.postedDrains === 0) {
          resolve({ now_ms: c.clock.now() });
        } else if (++turns > SETTLE_TURNS) {
          const why = `the runtime did not become idle within ${SETTLE_TURNS} macrotasks (a livelock?)`;
          reject(new CommandError('internal', why));
        } else {
          setImmediate(check);
        }
      };
      setImmediate(check);
    });
  },

  close(c, cmd) {
    c.target(cmd.target).obj.close();
    return {};
  },

  dispose(c, cmd) {
    const { obj } = c.target(cmd.target);
    asCommand(() => {
      switch (cmd.mode) {
        case 'dispose': obj.dispose(); break;
        case 'dispose_safely': obj.disposeSafely(); break;
        case 'dispose_after_timeout': obj.disposeAfterTimeout(cmd.timeout_ms); break;
        case 'destroy': obj.destroy(); break;
        default: throw bad(`unknown dispose mode ${JSON.stringify(cmd.mode)}`);
      }
    });
    // Every work the call made a zombie, once, on the queue it is on (SD-2).
    for (const zombie of obj.zombies()) {
      const ws = c.works.get(zombie.label);
      if (ws === undefined || c.zombiesSeen.has(ws.id)) continue;
      c.zombiesSeen.add(ws.id);
      c.emit('zombie', { work: ws.id, owner: ws.started ? ws.owner : ws.admitOwner });
    }
    return {};
  },

  as_not_safely(c, cmd) {
    c.target(cmd.target).obj.asNotSafely();
    return {};
  },

  await(c, cmd) {
    const { obj } = c.target(cmd.target);
    const waiter = nameOf(cmd, 'waiter');
    if (c.waiters.has(waiter)) throw bad(`waiter ${waiter} exists`);
    if (cmd.mode === 'quiescence') {
      if (c.target(cmd.target).type !== 'queue') throw bad('await_quiescence is a bare queue\'s');
      c.waiters.add(waiter);
      obj.awaitQuiescence().then(() => c.emit('returned', { waiter }));
    } else if (cmd.mode === 'completion') {
      c.waiters.add(waiter);
      obj.awaitCompletion().then(() => c.emit('returned', { waiter }));
    } else if (cmd.mode === 'after_cancellation') {
      c.waiters.add(waiter);
      const errors = [];
      obj.awaitAfterCancellation((error) => errors.push(error?.message ?? String(error))).then(
        () => c.emit('returned', { waiter, errors }),
        (error) => {
          if (!(error instanceof ZLinkNotDisposedError)) throw error; // a fault of the runtime
          c.emit('returned', { waiter, error: 'not_disposed' });
        },
      );
    } else {
      throw bad(`unknown await mode ${JSON.stringify(cmd.mode)}`);
    }
    return {};
  },

  runtime_end(c, cmd) {
    const waiter = nameOf(cmd, 'waiter');
    if (c.waiters.has(waiter)) throw bad(`waiter ${waiter} exists`);
    const graceMs = checkMs(cmd.grace_ms ?? 1000);
    c.waiters.add(waiter);
    c.runtime.end({ zombieGraceMs: graceMs }).then(({ cancelled, abandoned }) => {
      c.emit('returned', { waiter, cancelled: labels(cancelled), abandoned: labels(abandoned) });
    });
    return {};
  },

  statistics(c, cmd) {
    const { obj } = c.target(cmd.target);
    const owners = {};
    for (const [owner, s] of Object.entries(obj.statistics())) {
      owners[owner] = {
        application_count: s.applicationCount,
        application_bytes: s.applicationBytes,
        lifecycle_count: s.lifecycleCount,
        lifecycle_bytes: s.lifecycleBytes,
      };
    }
    return { active: obj.activeCount(), zombies: obj.zombieCount(), owners };
  },

  zombies(c, cmd) {
    const zombies = c.target(cmd.target).obj.zombies().map((zombie) => {
      const ws = c.works.get(zombie.label);
      const owner = ws === undefined ? zombie.owner : (ws.started ? ws.owner : ws.admitOwner);
      return { work: zombie.label, owner, state: ZOMBIE_STATES[zombie.state] };
    });
    return { zombies };
  },
};

// ---------------------------------------------------------------------------- main

async function serve() {
  const adapter = new Adapter();
  // An exception escaping the runtime's own callbacks means it broke one of its
  // invariants (a ZLinkProtocolError from a guard, say): report it as a fault.
  const fault = (error) => {
    log(`fault: ${error?.stack ?? error}`);
    adapter.case.emit('fault', { message: String(error?.message ?? error) });
  };
  process.on('uncaughtException', fault);
  process.on('unhandledRejection', fault);

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  let number = 0;
  for await (const line of lines) {
    number += 1;
    if (line.trim() === '') continue;
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (error) {
      log(`stdin line ${number}: not JSON (${error.message}); ignored`);
      continue;
    }
    if (typeof cmd !== 'object' || cmd === null || Array.isArray(cmd)) {
      log(`stdin line ${number}: not a JSON object; ignored`);
      continue;
    }
    let reply;
    try {
      const result = adapter.run(cmd);
      reply = { re: cmd.id ?? null, ok: true, ...(result instanceof Promise ? await result : result) };
    } catch (error) {
      // A CommandError is the adapter refusing a command; anything else is its own bug.
      const refused = error instanceof CommandError;
      if (!refused) log(`command ${JSON.stringify(cmd.cmd)}: ${error?.stack ?? error}`);
      const kind = refused ? error.kind : 'internal';
      reply = { re: cmd.id ?? null, ok: false, error: { kind, message: String(error?.message ?? error) } };
    }
    write(reply);
    if (cmd.cmd === 'shutdown' && reply.ok) break;
  }
  // Leaving the loop (shutdown, or the runner closed stdin) lets the process end once
  // stdout is flushed.
  lines.close();
  process.stdin.destroy();
}

serve();
