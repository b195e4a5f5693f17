#!/usr/bin/env node
// The conformance adapter of the Node.js example runtime (executor.js).
//
// It reads commands as JSON Lines on stdin and writes replies and events on stdout
// (specs/adapter-protocol.md); its log goes to stderr. Run the suite against it with
//
//   zlink conformance run --adapter "node conformance/examples/node/adapter.js" --allow-skips
//
// How it keeps the protocol's promises:
// * One case, one runtime, one virtual clock. `reset` drops every target, work, gate and
//   call and makes a fresh ZLinkRuntime whose clock moves only on `advance` and `busy`.
// * Events are written the moment they happen, from the code that makes them happen:
//   `accepted`/`rejected` by `submit` before its reply; `started`, `resumed`,
//   `finished`, `failed` by the work itself, on its turn; `yielded` by the runtime's
//   observer at the moment the turn is given back. Owners come from the queue that runs
//   the work (turn.owner), not from the routing table, so the runner's routing check
//   checks the runtime.
// * `settle` answers once nothing can progress: no drain the runtime posted is still
//   waiting to run, checked from a fresh macrotask (so every promise continuation that
//   was ready has run by then). See settle() below.
// * The runtime progresses between commands as Node's event loop lets it; cases never
//   depend on how far it gets before a `settle`.

import { createInterface } from 'node:readline';
import {
  lanePolicy,
  ZLinkActorSerialExecutor,
  ZLinkRejectedError,
  ZLinkRuntime,
  ZLinkSerialExecutionQueue,
  ZLinkSessionSerialExecutor,
  ZLinkSpotSerialExecutor,
  ZLinkYieldNotSupportedError,
} from './executor.js';

const PROTOCOL_VERSION = 1;
const RUNTIME = { name: 'zlink-node-example', version: '0.1.0', language: `node ${process.versions.node}` };

// Only what this runtime really does. Cases needing anything else are skipped by the
// runner: disposal, runtime_end, zombie_listing, zombie_warning (no scope disposal
// here), snapshots (no Actor registrations) and reentrancy_detection (no SE-8.2 check).
const CAPABILITIES = [
  'actor',
  'queue',
  'session',
  'single_execution_resource',
  'spot.entry',
  'spot.instance',
  'spot.user.per_actor',
  'spot.user.spot_wide',
  'statistics',
  'virtual_clock',
  'yield',
];

// Commands of the protocol this adapter answers with `unsupported`, and the capability
// each needs (the runner never sends them when that capability is not declared).
const UNSUPPORTED = {
  register: 'snapshots',
  update_registration: 'snapshots',
  dispose: 'disposal',
  as_not_safely: 'disposal',
  await: 'disposal',
  runtime_end: 'runtime_end',
  zombies: 'zombie_listing',
};
const UNSUPPORTED_OPS = { wait_for: 'reentrancy_detection', snapshot: 'snapshots' };

const NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;
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

/** A command this adapter refuses; becomes `{"ok": false, "error": {kind, message}}`. */
class CommandError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

const bad = (message) => new CommandError('bad_command', message);
const undeclared = (what, capability) =>
  new CommandError('unsupported', `${what} needs capability ${capability}, which this adapter does not declare`);

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

/** The runtime's clock for a case: integer milliseconds that move only when told. */
class VirtualClock {
  ms = 0;
  now() { return this.ms; }
  advance(ms) { this.ms += ms; }
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

/** An external call the runner completes or fails. */
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
   *  promise that the runner settles later. */
  start() {
    if (this.state === 'completed') return undefined;
    if (this.state === 'failed') throw new ScriptError(this.message);
    return this.settled;
  }
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

const snakeCase = (name) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The handshake's surface, read from the coordinator classes themselves: each
 *  execute* method and its parameter names, in the protocol's snake_case spelling. A
 *  parameter that let a caller pick a queue would show up here (SE-10.1). */
function surface() {
  const classes = {
    spot: ZLinkSpotSerialExecutor, actor: ZLinkActorSerialExecutor, session: ZLinkSessionSerialExecutor,
  };
  const out = {};
  for (const [type, cls] of Object.entries(classes)) {
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
    });
    this.targets = new Map(); // name -> {type, obj, queues()}
    this.works = new Map(); // name -> {id, started, ended, owner, pendingCall, yielded}
    this.gates = new Map();
    this.calls = new Map();
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
  /** Submit one work (from the `submit` command or a work's `submit` op); the verdict
   *  is written as an event before anything else about the work. */
  submit(sub) {
    const id = nameOf(sub, 'work');
    if (this.works.has(id)) throw bad(`work ${id} was submitted already`);
    const target = this.target(sub.target);
    const entry = ENTRIES[target.type][sub.entry];
    if (entry === undefined) throw bad(`a ${target.type} has no entry ${JSON.stringify(sub.entry)}`);
    const script = sub.script ?? [];
    checkScript(script);
    const ws = { id, started: false, ended: false, owner: target.name, pendingCall: null, yielded: false };
    let handle;
    try {
      handle = entry(target.obj, this.workFor(ws, script), sub);
    } catch (error) {
      if (error instanceof ZLinkRejectedError) {
        ws.ended = true;
        this.works.set(id, ws);
        this.emit('rejected', { work: id, owner: error.owner, reason: error.reason });
        return 'rejected';
      }
      if (error instanceof TypeError || error instanceof RangeError) throw bad(error.message);
      throw error;
    }
    handle.label = id;
    this.works.set(id, ws);
    this.emit('accepted', { work: id, owner: handle.queue.name });
    return 'accepted';
  }

  /** The function the runtime runs for a script. Without a gate or call op it never
   *  waits, so it is a plain synchronous function (a synchronous turn); otherwise async. */
  workFor(ws, script) {
    const begin = (turn) => {
      ws.started = true;
      ws.owner = turn.owner;
      this.emit('started', { work: ws.id, owner: ws.owner });
    };
    const end = (error) => {
      ws.ended = true;
      if (error === undefined) {
        this.emit('finished', { work: ws.id, owner: ws.owner });
        return;
      }
      const scripted = error instanceof ScriptError;
      if (!scripted) log(`work ${ws.id}: ${error?.stack ?? error}`);
      this.emit('failed', { work: ws.id, owner: ws.owner, message: scripted ? error.message : String(error) });
    };
    if (!script.some((op) => op.op === 'gate' || op.op === 'call')) {
      return (turn) => {
        begin(turn);
        try {
          script.forEach((op, index) => this.runOp(ws, index, op));
        } catch (error) {
          end(error);
          throw error;
        }
        end();
      };
    }
    return async (turn) => {
      begin(turn);
      try {
        for (const [index, op] of script.entries()) {
          if (op.op === 'gate') await this.gate(op.gate).opened;
          else if (op.op === 'call') await this.runCall(ws, turn, index, op.call);
          else this.runOp(ws, index, op);
        }
      } catch (error) {
        end(error);
        throw error;
      }
      end();
    };
  }

  runOp(ws, index, op) {
    switch (op.op) {
      case 'busy':
        this.clock.advance(op.ms);
        return;
      case 'raise':
        throw new ScriptError(op.message);
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

  /** The `call` op: a framework call on the named external call (SE-6.7). */
  async runCall(ws, turn, index, name) {
    const call = this.call(name);
    ws.pendingCall = name;
    try {
      await turn.yieldFrameworkCall(() => call.start());
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
}

/** Refuse a script this adapter cannot run before anything is submitted. */
function checkScript(script) {
  if (!Array.isArray(script)) throw bad('script must be a list of ops');
  for (const op of script) {
    if (typeof op !== 'object' || op === null) throw bad('a script op must be an object');
    if (Object.hasOwn(UNSUPPORTED_OPS, op.op)) throw undeclared(`op ${op.op}`, UNSUPPORTED_OPS[op.op]);
    if (op.op === 'gate') nameOf(op, 'gate');
    else if (op.op === 'call') nameOf(op, 'call');
    else if (op.op === 'busy') checkMs(op.ms);
    else if (op.op === 'raise') {
      if (typeof op.message !== 'string') throw bad('raise needs a message');
    } else if (op.op === 'submit') checkScript(op.script ?? []);
    else throw bad(`unknown op ${JSON.stringify(op.op)}`);
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

// ------------------------------------------------------------------------ commands

class Adapter {
  greeted = false;
  case = new Case();

  /** Carry out one command; returns the reply's fields (a promise for `settle`). */
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
    if (Object.hasOwn(UNSUPPORTED, name)) throw undeclared(name, UNSUPPORTED[name]);
    if (!Object.hasOwn(COMMANDS, name)) throw bad(`unknown command ${JSON.stringify(name)}`);
    return COMMANDS[name](this.case, cmd);
  }

  hello(cmd) {
    if (cmd.protocol !== PROTOCOL_VERSION) {
      const asked = JSON.stringify(cmd.protocol);
      throw new CommandError('unsupported', `this adapter speaks protocol ${PROTOCOL_VERSION}, not ${asked}`);
    }
    this.greeted = true;
    return { protocol: PROTOCOL_VERSION, runtime: RUNTIME, capabilities: CAPABILITIES, surface: surface() };
  }
}

const COMMANDS = {
  create(c, cmd) {
    const name = nameOf(cmd, 'target');
    if (c.targets.has(name)) throw bad(`target ${name} exists`);
    const policy = policyFrom(cmd.policy, 'policy');
    const runtime = c.runtime;
    let obj;
    try {
      switch (cmd.type) {
        case 'spot':
          obj = new ZLinkSpotSerialExecutor(name, {
            kind: cmd.kind ?? 'user', mode: cmd.mode, policy, runtime,
            actorPolicy: policyFrom(cmd.actor_policy, 'actor_policy'),
            timerPolicy: policyFrom(cmd.timer_policy, 'timer_policy'),
          });
          break;
        case 'actor':
          obj = new ZLinkActorSerialExecutor(name, { policy, runtime });
          break;
        case 'session':
          obj = new ZLinkSessionSerialExecutor(name, { policy, runtime });
          break;
        case 'queue': {
          const queue = new ZLinkSerialExecutionQueue(name, policy, runtime);
          queue.queues = () => [queue];
          obj = queue;
          break;
        }
        default:
          throw bad(`unknown target type ${JSON.stringify(cmd.type)}`);
      }
    } catch (error) {
      if (error instanceof TypeError || error instanceof RangeError) throw bad(error.message);
      throw error;
    }
    // actor_type and zombie_warn_after_ms only matter for snapshots and zombie
    // warnings, which this adapter does not declare: accepted and ignored.
    c.targets.set(name, { name, type: cmd.type, obj });
    return {};
  },

  submit(c, cmd) {
    return { verdict: c.submit(cmd) };
  },

  open(c, cmd) {
    c.gate(nameOf(cmd, 'gate')).open();
    return {};
  },

  complete(c, cmd) {
    const call = c.call(nameOf(cmd, 'call'));
    if (call.state !== 'pending') throw bad(`call ${cmd.call} was already ${call.state}`);
    call.complete();
    return { state: 'completed' };
  },

  fail(c, cmd) {
    const call = c.call(nameOf(cmd, 'call'));
    if (call.state !== 'pending') throw bad(`call ${cmd.call} was already ${call.state}`);
    call.fail(typeof cmd.message === 'string' ? cmd.message : 'external call failed');
    return { state: 'failed' };
  },

  advance(c, cmd) {
    // This runtime has no timers of its own (no disposal timeouts, no zombie
    // warnings), so moving the clock is all there is to do.
    c.clock.advance(checkMs(cmd.ms));
    return { now_ms: c.clock.now() };
  },

  /**
   * Answer once nothing can progress without further input. Every step of this
   * runtime is either a drain it posted with setImmediate (counted by
   * runtime.postedDrains) or a promise continuation (a microtask). Node runs every
   * ready microtask before the next macrotask, so a check made from a fresh
   * setImmediate that finds no posted drain left sees a runtime where every work is
   * finished, at a shut gate, yielded on a pending call, or queued behind one of those.
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

  statistics(c, cmd) {
    const owners = {};
    let active = 0;
    for (const queue of c.target(cmd.target).obj.queues()) {
      const s = queue.statistics();
      owners[queue.name] = {
        application_count: s.applicationCount,
        application_bytes: s.applicationBytes,
        lifecycle_count: s.lifecycleCount,
        lifecycle_bytes: s.lifecycleBytes,
      };
      active += queue.active;
    }
    return { active, zombies: 0, owners }; // no disposal here, hence no zombies
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
