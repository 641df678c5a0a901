/**
 * A simulated Redis 7.0 node: an in-memory keyspace with the commands distlock's scripts and
 * engine send, its Lua scripts run by a Lua 5.1-compatible VM, key expiry and `TIME` by the
 * node's own clock, and pub/sub delivery through a hook. Deterministic: the same commands at
 * the same clock readings give the same replies, bit for bit. See docs/simulation.md for
 * what it models and what it does not.
 *
 * @example
 * let now = 1_700_000_000_000_000n; // µs
 * const node = new SimulatedRedisNode({ name: 'n1', clockUs: () => now });
 * node.send('SET', ['k', 'v', 'PX', 100]); // { kind: 'status', value: 'OK' }
 * now += 101_000n;
 * node.send('GET', ['k']); // { kind: 'nil' }
 */
import { createHash } from 'node:crypto';
import { bytesOf } from './bytes.js';
import { arityAllows, type Command } from './commands/command.js';
import { HASH_COMMANDS } from './commands/hashes.js';
import { KEY_COMMANDS } from './commands/keys.js';
import { SCRIPTING_COMMANDS, type ScriptingContext } from './commands/scripting.js';
import { SERVER_COMMANDS, type ServerContext } from './commands/server.js';
import { SORTED_SET_COMMANDS } from './commands/sorted-sets.js';
import { STRING_COMMANDS } from './commands/strings.js';
import { type Entry, Keyspace } from './keyspace.js';
import { LuaScripts } from './lua/scripts.js';
import { type Reply, ReplyError } from './reply.js';

type NodeContext = ServerContext & ScriptingContext;

const COMMANDS = new Map<string, Command<NodeContext>>(
  [
    ...STRING_COMMANDS,
    ...KEY_COMMANDS,
    ...SORTED_SET_COMMANDS,
    ...HASH_COMMANDS,
    ...SERVER_COMMANDS,
    ...SCRIPTING_COMMANDS,
  ].map((command) => [command.name, command]),
);

/** The names of the commands the simulated node answers (lower case). */
export const MODELLED_COMMANDS: readonly string[] = [...COMMANDS.keys()];

/** Receives what PUBLISH sends on a channel (byte strings). */
/** A replica's copy of a node's keys (see `SimulatedRedisNode.replicate`). */
export interface Replica {
  readonly keys: ReadonlyMap<string, Readonly<Entry>>;
}

export type MessageListener = (channel: string, message: string) => void;

export interface SimulatedRedisNodeOptions {
  /** Names the node (its run_id derives from it and from how many times it restarted). */
  readonly name: string;
  /** The node's wall clock, in µs since the epoch: expiry, TTLs and `TIME` follow it. */
  readonly clockUs: () => bigint;
  /** The port INFO reports. @default 6379 */
  readonly port?: number;
  /** INFO's `maxmemory`, for the engine's eviction check (nothing is evicted). @default 0 */
  readonly maxmemory?: number;
  /** INFO's `maxmemory_policy`. @default 'noeviction' */
  readonly maxmemoryPolicy?: string;
  /** The Lua VM; one may serve every node of a simulation. @default one shared by all */
  readonly lua?: LuaScripts;
  /** How long the server has been up when created (INFO's `uptime_in_seconds`). @default 0 */
  readonly uptimeMs?: number;
}

let sharedLua: LuaScripts | undefined;

/** The Lua VM that nodes share unless given one (created on first use: it takes a few ms). */
function shared(): LuaScripts {
  sharedLua ??= new LuaScripts();
  return sharedLua;
}

export class SimulatedRedisNode {
  readonly name: string;
  readonly #options: SimulatedRedisNodeOptions;
  readonly #keyspace: Keyspace;
  readonly #scripts = new Map<string, string>();
  readonly #subscribers = new Map<string, Set<MessageListener>>();
  readonly #lua: LuaScripts;
  #restarts = 0;
  #runId: string;
  #startedUs: bigint;
  /** What commands see of the node, from a client and from a script (rebuilt on restart). */
  #contexts: Record<'client' | 'script', NodeContext>;

  constructor(options: SimulatedRedisNodeOptions) {
    this.name = options.name;
    this.#options = options;
    this.#keyspace = new Keyspace(() => options.clockUs() / 1000n);
    this.#lua = options.lua ?? shared();
    this.#startedUs = options.clockUs() - BigInt(Math.floor((options.uptimeMs ?? 0) * 1000));
    this.#runId = this.#newRunId();
    this.#contexts = { client: this.#context(false), script: this.#context(true) };
  }

  /** The node's identity, as INFO reports it; a new one after each restart. */
  get runId(): string {
    return this.#runId;
  }

  #newRunId(): string {
    return createHash('sha1').update(`${this.name}#${this.#restarts}`).digest('hex');
  }

  /**
   * Runs one command. `args` are text (sent as UTF-8, as a client library sends them) or
   * numbers (sent as their decimal string).
   */
  send(command: string, args: readonly (string | number)[] = []): Reply {
    return this.execute([command, ...args].map((arg) => bytesOf(String(arg))));
  }

  /** Runs one command given as byte strings (the name first), as a client's request. */
  execute(argv: readonly string[]): Reply {
    const [name = '', ...args] = argv;
    const command = COMMANDS.get(name.toLowerCase());
    if (!command) {
      let shown = '';
      for (const arg of args) {
        if (shown.length >= 128) break;
        shown += `'${arg.slice(0, 128 - shown.length)}' `;
      }
      const line = `ERR unknown command '${name.slice(0, 128)}', with args beginning with: ${shown}`;
      return { kind: 'error', value: line.replace(/[\r\n]/g, ' ') };
    }
    if (!arityAllows(command.arity, argv.length)) {
      return {
        kind: 'error',
        value: `ERR wrong number of arguments for '${command.name}' command`,
      };
    }
    return this.#run(command, args, false);
  }

  /** Subscribes `listener` to `channel`: PUBLISH calls it at once. Returns how to unsubscribe. */
  subscribe(channel: string, listener: MessageListener): () => void {
    const listeners = this.#subscribers.get(channel) ?? new Set();
    this.#subscribers.set(channel, listeners);
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.#subscribers.delete(channel);
    };
  }

  /**
   * Restarts the node: a new run_id, no scripts, no subscribers; the keyspace survives only
   * with `persistence` (as if reloaded from disk: expired keys are gone on first access).
   */
  restart({ persistence }: { persistence: boolean }): void {
    this.#restarts += 1;
    this.#runId = this.#newRunId();
    this.#startedUs = this.#options.clockUs();
    this.#contexts = { client: this.#context(false), script: this.#context(true) };
    this.#scripts.clear();
    this.#subscribers.clear();
    if (!persistence) this.#keyspace.clear();
  }

  /** What a replica of the node holds: its keys as they are now. */
  replicate(): Replica {
    return { keys: this.#keyspace.copy() };
  }

  /**
   * A replica that stopped replicating when `replica` was taken is promoted in the node's
   * place: another server (a new run_id, no scripts, no subscribers), with the keys it had
   * then. Every write since is lost, as in a failover to a replica that lags.
   */
  promote(replica: Replica): void {
    this.restart({ persistence: true });
    this.#keyspace.replaceWith(replica.keys);
  }

  /**
   * `MIGRATE` of one key (a Redis Cluster moving a hash slot): the key leaves this node and
   * is stored on `to` with the time it had left, counted by `to`'s clock, replacing what `to`
   * had there (as `MIGRATE ... REPLACE`). Returns false when the key does not exist (or
   * expired) here.
   */
  migrateKey(key: string, to: SimulatedRedisNode): boolean {
    const value = this.#keyspace.get(key);
    const expiresAt = this.#keyspace.expiresAt(key);
    if (value === undefined || expiresAt === null) return false;
    this.#keyspace.delete(key);
    const target = to.#keyspace;
    target.set(key, value);
    if (expiresAt !== undefined) {
      const leftMs = expiresAt - this.#options.clockUs() / 1000n;
      target.setExpiry(key, to.#options.clockUs() / 1000n + leftMs);
    }
    return true;
  }

  #run(command: Command<NodeContext>, args: readonly string[], inScript: boolean): Reply {
    try {
      return command.run(this.#contexts[inScript ? 'script' : 'client'], args);
    } catch (error) {
      if (error instanceof ReplyError) return error.reply;
      throw error;
    }
  }

  /** A command from a script (`redis.call`): Redis's script-side checks first. */
  #runFromScript(argv: string[]): Reply {
    const [name = '', ...args] = argv;
    const command = COMMANDS.get(name.toLowerCase());
    if (!command) return scriptRefusal('Unknown Redis command called from script');
    if (!arityAllows(command.arity, argv.length)) {
      return scriptRefusal('Wrong number of args calling Redis command from script');
    }
    if (command.noScript) return scriptRefusal('This Redis command is not allowed from script');
    return this.#run(command, args, true);
  }

  #context(inScript: boolean): NodeContext {
    const options = this.#options;
    return {
      keyspace: this.#keyspace,
      nowUs: options.clockUs,
      nowMs: () => options.clockUs() / 1000n,
      inScript,
      runId: this.#runId,
      startedUs: this.#startedUs,
      port: options.port ?? 6379,
      maxmemory: options.maxmemory ?? 0,
      maxmemoryPolicy: options.maxmemoryPolicy ?? 'noeviction',
      publish: (channel, message) => {
        const listeners = [...(this.#subscribers.get(channel) ?? [])];
        for (const listener of listeners) listener(channel, message);
        return listeners.length;
      },
      scripts: this.#scripts,
      lua: this.#lua,
      runFromScript: (argv) => this.#runFromScript(argv),
    };
  }
}

/** What `redis.call` gets for a command a script may not run. */
function scriptRefusal(message: string): Reply {
  return { kind: 'error', value: `ERR ${message}` };
}
