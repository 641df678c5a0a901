import { namesOf, rejectUnknownOptions } from '../config/option-names.js';
// From the main entry, so that a CommonJS test's engine knows the class (see scripts/build.mjs).
import {
  InvalidArgumentError,
  MissingLibraryError,
  NotSentError,
  type RedisConnection,
  type Subscriber,
} from '../index.js';

type Model = typeof import('./in-memory/index.js');
type Node = InstanceType<Model['SimulatedRedisNode']>;
type Listener = (channel: string, message?: string) => void;

/** Options of {@link InMemoryRedis}. */
export interface InMemoryRedisOptions {
  /** The node's name in errors and events. @default `memory-1`, `memory-2`, ... */
  readonly name?: string;
}

let created = 0;
let model: Promise<Model> | undefined;
let loaded: Model | undefined;

/** Whether `error` says that the package fengari is not installed. */
function isFengariMissing(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'MODULE_NOT_FOUND' && String(message).includes("'fengari");
}

/** The model, and with it the Lua VM, imported once, on first use. */
function loadModel(): Promise<Model> {
  model ??= import('./in-memory/index.js').then(
    (module) => {
      loaded = module;
      return module;
    },
    (cause: unknown) => {
      model = undefined;
      if (!isFengariMissing(cause)) throw cause;
      throw new MissingLibraryError('fengari', 'to run its Lua scripts in an InMemoryRedis', {
        instead: 'as a dev dependency: npm install --save-dev fengari',
        cause,
      });
    },
  );
  return model;
}

/**
 * One Redis 7.0 node in this process, for unit tests of code that takes locks: pass it to a
 * `Locker` as a node (`new Locker({ nodes: [new InMemoryRedis()] })`, or several for
 * Redlock). It runs distlock's real Lua scripts (in fengari, a Lua VM in JavaScript: install
 * it as a dev dependency) against an in-memory keyspace, and answers at once: no server, no
 * socket, no delay.
 *
 * **Time** is the process's: keys expire by `Date.now()`, and the locker's deadlines, retries
 * and lost-lock signals run on `performance.now()` and timers. Fake timers that replace all
 * three (vitest's `vi.useFakeTimers()`, `@sinonjs/fake-timers`' `install()`) make expiry,
 * failed extensions and lost locks happen when the test advances the clock.
 *
 * **Faults**, by name as on `RedisServer`: {@link InMemoryRedis.kill} (the node is gone, its
 * keys with it), {@link InMemoryRedis.restart}, {@link InMemoryRedis.pause} and
 * {@link InMemoryRedis.resume} (the node answers nothing meanwhile). It models one server with
 * the commands distlock sends, not the network, replication or a Cluster: the integration
 * tests on real Redis stay the proof (docs/testing-kit.md says what it models).
 *
 * @example
 * ```ts
 * const locker = new Locker({ nodes: [new InMemoryRedis()] });
 * await locker.withLock('report', { ttlMs: 5_000 }, async (signal) => { ... });
 * ```
 */
export class InMemoryRedis implements RedisConnection {
  readonly name: string;
  #node: Node | undefined;
  #generation = 1;
  #killed = false;
  #paused = false;
  /** Commands that reached a paused node, run when it resumes. */
  #queued: (() => void)[] = [];
  readonly #subscribers = new Set<InMemorySubscriber>();

  constructor(options: InMemoryRedisOptions = {}) {
    rejectUnknownOptions(options, namesOf<InMemoryRedisOptions>({ name: true }), 'InMemoryRedis');
    if (options.name !== undefined && (typeof options.name !== 'string' || !options.name)) {
      throw new InvalidArgumentError('name', 'a non-empty string', options.name);
    }
    created += 1;
    this.name = options.name ?? `memory-${created}`;
  }

  /** Changes when the node restarts: distlock then reads which server it is again. */
  get generation(): number {
    return this.#generation;
  }

  /** Loads the model (and the Lua VM); rejects with `MissingLibraryError` without fengari. */
  async connect(): Promise<void> {
    await this.#ready();
  }

  async #ready(): Promise<Node> {
    const { SimulatedRedisNode } = await loadModel();
    this.#node ??= new SimulatedRedisNode({
      name: this.name,
      clockUs: () => BigInt(Date.now()) * 1000n,
    });
    return this.#node;
  }

  send(command: string, args: readonly (string | number)[]): Promise<unknown> {
    if (this.#killed) {
      return Promise.reject(new NotSentError(`${this.name} is down (InMemoryRedis.kill())`));
    }
    const generation = this.#generation;
    return this.#ready().then(
      (node) =>
        new Promise((resolve, reject) => {
          const run = () => {
            if (generation !== this.#generation) {
              reject(new Error(`${this.name}: connection reset (the node was killed)`));
              return;
            }
            const reply = toValue(node.send(command, args));
            if (reply instanceof Error) reject(reply);
            else resolve(reply);
          };
          if (this.#paused) this.#queued.push(run);
          else run();
        }),
    );
  }

  /**
   * Runs one command as a test's own client would, e.g. `await redis.command('PTTL', key)`,
   * paused or not; rejects with the error reply. Commands distlock does not send are not
   * modelled (they fail with `ERR unknown command`).
   */
  async command(name: string, ...args: (string | number)[]): Promise<unknown> {
    if (this.#killed) throw new NotSentError(`${this.name} is down (InMemoryRedis.kill())`);
    const reply = toValue((await this.#ready()).send(name, args));
    if (reply instanceof Error) throw reply;
    return reply;
  }

  /** The node is gone, with everything in memory: commands fail until `restart()`. */
  kill(): void {
    if (this.#killed) return;
    this.#killed = true;
    this.#paused = false;
    this.#generation += 1;
    const queued = this.#queued;
    this.#queued = [];
    for (const run of queued) run(); // each rejects: its connection was reset
    for (const subscriber of this.#subscribers) subscriber.lose();
  }

  /**
   * Starts the node again (killing it first if it runs): another server, as distlock sees
   * it, with empty memory, or with its keys when `persistence` is true (as if reloaded from
   * an append-only file that had every write).
   */
  restart({ persistence = false }: { readonly persistence?: boolean } = {}): void {
    this.kill();
    this.#node?.restart({ persistence });
    this.#killed = false;
    for (const subscriber of this.#subscribers) subscriber.reconnect();
  }

  /** The node answers nothing (as after SIGSTOP) until `resume()`; commands wait for it. */
  pause(): void {
    if (!this.#killed) this.#paused = true;
  }

  /** A paused node runs what waited, in order, and answers again. */
  resume(): void {
    this.#paused = false;
    const queued = this.#queued;
    this.#queued = [];
    for (const run of queued) run();
  }

  openSubscriber(onMessage: Listener, onReady?: () => void): Subscriber {
    const subscriber = new InMemorySubscriber(this, onMessage, onReady, () => {
      this.#subscribers.delete(subscriber);
    });
    this.#subscribers.add(subscriber);
    return subscriber;
  }

  /** @internal Listens on the node's `channel` (for a subscriber); rejects while it is down. */
  async listen(channel: string, listener: (message: string) => void): Promise<() => void> {
    if (this.#killed) throw new Error(`${this.name} is down (InMemoryRedis.kill())`);
    const node = await this.#ready();
    const { textOf } = loaded as Model;
    return node.subscribe(channel, (_channel, message) => listener(textOf(message)));
  }

  /** Nothing to close: the node lives as long as this object. */
  async close(): Promise<void> {}
}

/** A reply as a connection resolves it, or the `Error` of an error reply. */
function toValue(reply: Parameters<Model['toConnectionValue']>[0]): unknown {
  // A node exists only once the model is loaded.
  return (loaded as Model).toConnectionValue(reply);
}

/** Pub/sub on an {@link InMemoryRedis}: messages arrive after the publishing command. */
class InMemorySubscriber implements Subscriber {
  #closed = false;
  readonly #channels = new Map<string, () => void>();

  constructor(
    private readonly redis: InMemoryRedis,
    private readonly onMessage: Listener,
    private readonly onReady: (() => void) | undefined,
    private readonly onClose: () => void,
  ) {
    this.reconnect();
  }

  async subscribe(channel: string): Promise<unknown> {
    if (this.#closed || this.#channels.has(channel)) return 1;
    const stop = await this.redis.listen(channel, (message) => {
      queueMicrotask(() => {
        if (!this.#closed) this.onMessage(channel, message);
      });
    });
    if (this.#closed) stop();
    else this.#channels.set(channel, stop);
    return 1;
  }

  async unsubscribe(channel: string): Promise<unknown> {
    this.#channels.get(channel)?.();
    this.#channels.delete(channel);
    return 1;
  }

  /** The node went away: its subscriptions went with it. */
  lose(): void {
    for (const stop of this.#channels.values()) stop();
    this.#channels.clear();
  }

  /** The node is back: the caller subscribes again. */
  reconnect(): void {
    queueMicrotask(() => {
      if (!this.#closed) this.onReady?.();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.lose();
    this.onClose();
  }
}
