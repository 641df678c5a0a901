/**
 * A Redis Cluster in the simulation: one lock service (one Redlock node) served by two
 * masters, whose hash slots move from one to the other while clients lock, as a reshard moves
 * them. The masters answer as Redis 7.0.3 and later do during a move (`getNodeByQuery`; 7.0.0
 * to 7.0.2 answered `ASK` where the migrating master now says `TRYAGAIN`): `MOVED` from a
 * master that does not serve the slot, `ASK` from the master that is migrating it when none
 * of the command's keys is left there, and `TRYAGAIN` for a command on several keys that are
 * not all on one side. Redis cannot tell a key that moved from one that never existed, so a
 * script naming a key that does not exist is answered as if that key had moved.
 *
 * The masters' clocks agree (one rate, and a jump moves both): a move carries a key's TTL,
 * but a permit's or a reader's expiry is a score by the server's clock, which a master whose
 * clock is ahead reads as earlier (docs/deployments.md, "Redis Cluster"). Seed 47 of the
 * focus, with a clock set back on one master only, let a second holder take a 1-permit
 * semaphore once the slot moved to the master that was not set back.
 *
 * Clients reach the cluster through {@link SimClusterConnection}, which routes each command
 * by its slot and follows those answers with the engine's own `sendFollowing`, as the
 * Cluster adapters do.
 */
import {
  type ClusterRoutes,
  keyOf,
  masterInfo,
  sendFollowing,
} from '../src/driver/cluster-routing.js';
import { NotSentError, type RedisConnection, type Subscriber } from '../src/driver/connection.js';
import { keySlot } from '../src/driver/libraries.js';
import type { Reply } from '../src/testing/in-memory/reply.js';
import { type ClientProcess, SimConnection } from './connection.js';
import type { Links, WorldNode } from './network.js';
import type { Random } from './random.js';

/** A slot on its way from one master to the other. */
interface Migration {
  readonly slot: number;
  readonly from: WorldNode;
  readonly to: WorldNode;
}

/** Commands without a key (the rest name theirs first, or, for scripts, after numkeys). */
const KEYLESS = new Set(['INFO', 'PUBLISH', 'PING', 'TIME', 'SCAN', 'SCRIPT', 'KEYS']);

const TRYAGAIN_TEXT = 'Multiple keys request during rehashing of slot';

export class SimCluster {
  /** `cluster n1a:6379,n1b:6379`, as the adapters name a cluster. */
  readonly name: string;
  /** Slots that moved away from the master that first served them. */
  readonly #owners = new Map<number, WorldNode>();
  #migration: Migration | undefined;
  /** How many commands the masters refused, by the redirection they answered. */
  readonly redirections = { MOVED: 0, ASK: 0, TRYAGAIN: 0 };

  constructor(readonly shards: readonly WorldNode[]) {
    this.name = `cluster ${shards.map((shard) => shard.node.name).join(',')}`;
    for (const shard of shards) shard.cluster = this;
  }

  /** The master that serves `slot`: every master of the cluster agrees on it. */
  ownerOf(slot: number): WorldNode {
    return this.#owners.get(slot) ?? (this.shards[slot % this.shards.length] as WorldNode);
  }

  /** The slot being moved now, if any. */
  get migration(): Migration | undefined {
    return this.#migration;
  }

  /**
   * What `shard` answers instead of running a command, if it may not run it: a redirection
   * (see the file's comment); undefined when it runs it. `asking`: `ASKING` came right before.
   */
  refusal(
    shard: WorldNode,
    command: string,
    args: readonly (string | number)[],
    asking: boolean,
  ): Reply | undefined {
    const keys = keysOf(command, args);
    const [first] = keys;
    if (first === undefined) return undefined;
    const slot = keySlot(first);
    const owner = this.ownerOf(slot);
    const migration = this.#migration?.slot === slot ? this.#migration : undefined;
    const importing = migration?.to === shard;
    if (owner !== shard && !(importing && asking)) {
      return this.#redirect('MOVED', `${slot} ${owner.node.name}`);
    }
    if (!migration) return undefined;
    const present = keys.filter((key) => exists(shard, key)).length;
    if (migration.from === shard && present < keys.length) {
      if (present > 0) return this.#redirect('TRYAGAIN', TRYAGAIN_TEXT);
      return this.#redirect('ASK', `${slot} ${migration.to.node.name}`);
    }
    if (importing && new Set(keys).size > 1 && present < keys.length) {
      return this.#redirect('TRYAGAIN', TRYAGAIN_TEXT);
    }
    return undefined;
  }

  #redirect(kind: keyof SimCluster['redirections'], text: string): Reply {
    this.redirections[kind] += 1;
    return { kind: 'error', value: `${kind} ${text}` };
  }

  /** Starts moving `slot` to `to`: it is migrating on its owner, importing on `to`. */
  beginMove(slot: number, to: WorldNode): void {
    this.#migration = { slot, from: this.ownerOf(slot), to };
  }

  /**
   * One step of the move under way: `MIGRATE`s one key of the slot that is still on the
   * master it leaves, or, when none is left, gives the slot to the other master (`CLUSTER
   * SETSLOT <slot> NODE`, on every master at once). Returns whether the move is done.
   */
  stepMove(): boolean {
    const migration = this.#migration;
    if (!migration) return true;
    const { slot, from, to } = migration;
    const key = keysOn(from).find((candidate) => keySlot(candidate) === slot);
    if (key !== undefined) {
      from.node.migrateKey(key, to.node);
      return false;
    }
    this.#owners.set(slot, to);
    this.#migration = undefined;
    return true;
  }
}

/**
 * Moves the slots of the cluster's keys between its masters until `stop()`: every so often
 * (drawn from `random`), the slot of a key picked at random goes to the other master, one
 * key at a time, a few ms apart (sometimes longer than a per-node timeout), while both
 * masters are up. A move under way when `stop()` is called is finished.
 */
export function moveSlots(
  cluster: SimCluster,
  random: Random,
  enabled: boolean,
  note: (line: string) => void,
): { stop(): void } {
  let stopped = false;
  const up = () => cluster.shards.every((shard) => shard.up);
  const step = () => {
    if (!up()) return setTimeout(step, 10);
    if (cluster.stepMove()) {
      note('slot-move done');
      if (!stopped) setTimeout(begin, random.next() * 400);
      return;
    }
    setTimeout(step, random.chance(0.1) ? random.next() * 60 : random.next() * 4);
  };
  const begin = () => {
    if (stopped) return;
    const keys = cluster.shards.flatMap(keysOn);
    if (keys.length === 0 || !up() || !enabled) return setTimeout(begin, random.next() * 400);
    const slot = keySlot(random.pick(keys));
    const from = cluster.ownerOf(slot);
    const to = random.pick(cluster.shards.filter((shard) => shard !== from));
    note(`fault slot-move ${slot} ${from.node.name}→${to.node.name}`);
    cluster.beginMove(slot, to);
    step();
  };
  setTimeout(begin, random.next() * 400);
  return {
    stop() {
      stopped = true; // no move begins from now on; one under way goes on to its end
    },
  };
}

/**
 * A client's connection to a {@link SimCluster}: one {@link SimConnection} to each master, a
 * slot table of its own (corrected by each `MOVED`), and the adapters' way of following a
 * reshard (`sendFollowing`). `INFO` is asked of every master, as the adapters do.
 */
export class SimClusterConnection implements RedisConnection {
  readonly name: string;
  readonly #members: readonly SimConnection[];
  /** What this client learned from `MOVED`: slots it knows moved since it connected. */
  readonly #moved = new Map<number, SimConnection>();

  constructor(
    readonly cluster: SimCluster,
    links: Links,
    client: ClientProcess,
  ) {
    this.name = cluster.name;
    this.#members = cluster.shards.map((shard) => new SimConnection(shard, links, client));
  }

  /** Changes whenever a connection to a master is established again. */
  get generation(): number {
    return this.#members.reduce((sum, member) => sum + member.generation, 0);
  }

  send(command: string, args: readonly (string | number)[], timeoutMs: number): Promise<unknown> {
    if (command === 'INFO') return this.#infoOfEveryMaster();
    const key = keyOf(command, args);
    if (key === undefined) return this.#first.send(command, args);
    const slot = keySlot(key);
    const routes: ClusterRoutes = {
      routed: () => this.#memberFor(slot).send(command, args),
      moved: (address) => {
        const member = this.#memberAt(address);
        this.#moved.set(slot, member);
        return member.send(command, args);
      },
      asked: (address) => this.#memberAt(address).sendAsking(command, args),
    };
    return sendFollowing(routes, timeoutMs);
  }

  sendAlways(command: string, args: readonly (string | number)[], timeoutMs: number) {
    return this.send(command, args, timeoutMs);
  }

  shardOf(command: string, args: readonly (string | number)[]): string | undefined {
    const key = keyOf(command, args);
    return key === undefined ? undefined : this.#memberFor(keySlot(key)).name;
  }

  async masters(): Promise<readonly RedisConnection[]> {
    return this.#members;
  }

  /**
   * A subscriber on every master: a `PUBLISH` on any master of a cluster reaches subscribers
   * on all of them, once.
   */
  openSubscriber(
    onMessage: (channel: string, message?: string) => void,
    onReady?: () => void,
  ): Subscriber {
    const subscribers = this.#members.map((member) => member.openSubscriber(onMessage, onReady));
    const each = (call: (subscriber: Subscriber) => Promise<unknown>) =>
      Promise.all(subscribers.map(call)).then(() => 1);
    return {
      subscribe: (channel) => each((subscriber) => subscriber.subscribe(channel)),
      unsubscribe: (channel) => each((subscriber) => subscriber.unsubscribe(channel)),
      close: () => each((subscriber) => subscriber.close()).then(() => undefined),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.#members.map((member) => member.close()));
  }

  get #first(): SimConnection {
    return this.#members[0] as SimConnection;
  }

  /** The master of `slot` as far as this client knows: the first owner, unless MOVED said. */
  #memberFor(slot: number): SimConnection {
    return this.#moved.get(slot) ?? (this.#members[slot % this.#members.length] as SimConnection);
  }

  /** The connection to the master a redirection names, as the adapters find it. */
  #memberAt(address: string): SimConnection {
    const member = this.#members.find((candidate) => candidate.name === address);
    if (!member) throw new NotSentError(`${this.name} has no connection to ${address}`);
    return member;
  }

  async #infoOfEveryMaster(): Promise<string> {
    const replies = await Promise.allSettled(
      this.#members.map(async (member) =>
        masterInfo(String(await member.send('INFO', [])), member.name),
      ),
    );
    const answered = replies.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = replies.find((r) => r.status === 'rejected');
    if (answered.length === 0 && failed) throw failed.reason;
    return answered.join('\r\n');
  }
}

/** The keys of a command: a script's KEYS, or the first argument of a keyed command. */
function keysOf(command: string, args: readonly (string | number)[]): string[] {
  const name = command.toUpperCase();
  if (name === 'EVAL' || name === 'EVALSHA') {
    return args.slice(2, 2 + Number(args[1])).map(String);
  }
  if (KEYLESS.has(name) || args[0] === undefined) return [];
  return [String(args[0])];
}

/** The live keys of a master. */
function keysOn(shard: WorldNode): string[] {
  const reply = shard.node.send('KEYS', ['*']);
  return reply.kind === 'array'
    ? reply.value.flatMap((key) => (key.kind === 'bulk' ? [key.value] : []))
    : [];
}

function exists(shard: WorldNode, key: string): boolean {
  const reply = shard.node.send('EXISTS', [key]);
  return reply.kind === 'integer' && reply.value === 1n;
}
