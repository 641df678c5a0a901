import { ask } from './ask.js';
import { freePort } from './ports.js';
import { RedisServer } from './redis-server.js';
import { type Progress, until } from './until.js';

const SLOTS = 16384;

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /**
   * Shards: masters splitting the 16384 slots evenly. A killed master is replaced only by a
   * majority vote of the masters, so automatic failover needs 3 or more. Minimum 1.
   * @default 3
   */
  masters?: number;
  /** Replicas following each master. Minimum 0. @default 1 */
  replicasPerMaster?: number;
  /**
   * `cluster-node-timeout`: how long a node may not answer before it counts as failing. Small,
   * so that a killed master's replica takes over within about two of these. Minimum 1.
   * @default 1000
   */
  nodeTimeoutMs?: number;
  /**
   * Extra `redis-server` arguments for every node. They come last, so they override the
   * fixture's own, e.g. `['--cluster-require-full-coverage', 'yes']`.
   */
  args?: readonly string[];
}

/**
 * A Redis Cluster of real `redis-server` processes on loopback ports. Faults are the nodes'
 * own: `kill()`, `pause()`, `restart()`. A restarted node keeps its temp dir and so its
 * `nodes.conf`: it rejoins under its old id, with empty memory, and a former master whose
 * replica took over meanwhile comes back as that replica's replica. Call
 * {@link RedisCluster.waitUntilHealthy} after a restart.
 */
export interface RedisCluster extends AsyncDisposable {
  /**
   * Every node. At the start the first `masters` nodes are the masters and the replica at
   * `nodes[masters + k]` follows master `k % masters`; failovers change roles since.
   */
  readonly nodes: readonly RedisServer[];
  /** `{ host, port }` of every node, e.g. for `new Cluster(startupNodes)` (ioredis). */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** The masters owning slots now, in slot order, as the first node that answers sees them. */
  masters(): Promise<RedisServer[]>;
  /** The master owning `key`'s slot now (possibly a node just killed and not yet replaced). */
  masterOf(key: string): Promise<RedisServer>;
  /** The replicas the cluster lists for `master` (one killed moments ago may still be listed). */
  replicasOf(master: RedisServer): Promise<RedisServer[]>;
  /**
   * Sends `CLUSTER FAILOVER [mode]` to `replica`, then waits until it is a master and the
   * cluster is healthy again. `FORCE` skips the handshake with a dead master; `TAKEOVER` also
   * the vote of the other masters.
   */
  failover(replica: RedisServer, mode?: 'FORCE' | 'TAKEOVER'): Promise<void>;
  /**
   * Waits until every running node reports `cluster_state:ok` with all slots served, knows
   * every node, sees no running node as failing, agrees with the others on who is master of
   * which slots (all of them running) and who replicates whom, and, if a replica, is in sync
   * with its master. Paused nodes count as down.
   * @default timeoutMs max(10000, 10 × nodeTimeoutMs)
   */
  waitUntilHealthy(timeoutMs?: number): Promise<void>;
  /** Kills every node and removes every temp dir. Safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * Starts a Redis Cluster (3 masters with 1 replica each by default) and waits until it is
 * healthy.
 *
 * @example
 * ```ts
 * await using cluster = await startRedisCluster();
 * const client = new Cluster([...cluster.startupNodes]);
 * const master = await cluster.masterOf('lock:a');
 * const [replica] = await cluster.replicasOf(master);
 * await master.kill(); // its replica takes over after about 2 × nodeTimeoutMs
 * ```
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = checkedInteger('masters', options.masters ?? 3, 1);
  const replicasPerMaster = checkedInteger('replicasPerMaster', options.replicasPerMaster ?? 1, 0);
  const nodeTimeoutMs = checkedInteger('nodeTimeoutMs', options.nodeTimeoutMs ?? 1000, 1);
  const args = [
    ...['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'],
    ...['--cluster-node-timeout', String(nodeTimeoutMs)],
    // Shards stay independent: with a shard's master down (and no replica promoted yet, or
    // none to promote), the other shards keep serving their keys, as lock tests expect.
    ...['--cluster-require-full-coverage', 'no'],
    // A replica may take over however long its master was paused or it was itself down.
    ...['--cluster-replica-validity-factor', '0'],
    // The default waits 5 s for more replicas before the first sync to one.
    ...['--repl-diskless-sync-delay', '0'],
    ...(options.args ?? []),
  ];
  const started = await Promise.allSettled(
    Array.from({ length: masters * (1 + replicasPerMaster) }, () => startNode(args)),
  );
  const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const cluster = new LiveCluster(
    nodes.map((n) => n.server),
    Math.max(10_000, 10 * nodeTimeoutMs),
  );
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    await cluster.create(masters, new Map(nodes.map((n) => [n.server, n.busPort])));
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

function checkedInteger(name: string, value: number, minimum: number): number {
  if (!Number.isSafeInteger(value) || value < minimum) {
    throw new TypeError(
      `Expected \`${name}\` to be an integer >= ${minimum}, got \`${value}\` (${typeof value})`,
    );
  }
  return value;
}

/** The bus port is chosen here since the default, port + 10000, may be taken or too high. */
async function startNode(args: readonly string[]) {
  for (let tries = 1; ; tries++) {
    const busPort = await freePort();
    try {
      const server = await RedisServer.start({
        args: ['--cluster-port', String(busPort), ...args],
      });
      return { server, busPort };
    } catch (error) {
      if (tries >= 5 || !/in use/i.test(String(error))) throw error;
    }
  }
}

/** One line of `CLUSTER NODES`. */
interface NodeEntry {
  readonly id: string;
  readonly port: number;
  readonly flags: readonly string[];
  readonly masterId: string | undefined;
  readonly slots: readonly (readonly [number, number])[];
}

function parseNodes(reply: unknown): NodeEntry[] {
  return String(reply)
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', address = '', flags = '', master = '-', ...rest] = line.split(' ');
      const slots = rest
        .slice(4) // ping-sent, pong-recv, config-epoch, link-state
        .filter((range) => !range.startsWith('[')) // slots being migrated
        .map((range) => {
          const [first = Number.NaN, last = first] = range.split('-').map(Number);
          return [first, last] as const;
        });
      const port = Number(address.split('@')[0]?.split(':').pop());
      const masterId = master === '-' ? undefined : master;
      return { id, port, flags: flags.split(','), masterId, slots };
    });
}

/** Flags of a node that is not (yet) a healthy member. */
const SICK_FLAGS = ['fail', 'fail?', 'handshake', 'noaddr'];

/** What one node reports of the cluster, for the health check. */
interface Report {
  readonly info: string;
  readonly view: readonly NodeEntry[];
  readonly replication: string;
}

/** Why `report` shows an unhealthy cluster, if it does; `live` are the running nodes' ports. */
function problemIn(report: Report, live: ReadonlySet<number>, size: number): string | undefined {
  const { info, view, replication } = report;
  const state = info.match(/^cluster_state:(\w+)/m)?.[1];
  if (state !== 'ok') return `cluster_state:${state}`;
  const served = info.match(/^cluster_slots_ok:(\d+)/m)?.[1];
  if (served !== String(SLOTS)) return `${served} of ${SLOTS} slots served`;
  if (view.length !== size) return `knows ${view.length} of ${size} nodes`;
  const sick = view.find((e) => live.has(e.port) && e.flags.some((f) => SICK_FLAGS.includes(f)));
  if (sick) return `sees node ${sick.port} as ${sick.flags.join(',')}`;
  const down = view.find((e) => e.slots.length > 0 && !live.has(e.port));
  if (down) return `sees slots on node ${down.port}, which is down`;
  if (/^role:slave/m.test(replication) && !/^master_link_status:up/m.test(replication)) {
    return 'is a replica out of sync with its master';
  }
  return undefined;
}

/** Who is master of which slots and who follows whom, among the running nodes. */
function layoutOf(view: readonly NodeEntry[], live: ReadonlySet<number>): string {
  const portOf = new Map(view.map((entry) => [entry.id, entry.port]));
  return view
    .filter((entry) => live.has(entry.port))
    .sort((a, b) => a.port - b.port)
    .map((entry) =>
      entry.masterId === undefined
        ? `${entry.port}[${entry.slots.map((range) => range.join('-')).join(',')}]`
        : `${entry.port}>${portOf.get(entry.masterId)}`,
    )
    .join(' ');
}

class LiveCluster implements RedisCluster {
  readonly startupNodes: readonly { host: string; port: number }[];

  constructor(
    readonly nodes: readonly RedisServer[],
    private readonly waitMs: number,
  ) {
    this.startupNodes = nodes.map((node) => ({ host: '127.0.0.1', port: node.port }));
  }

  /**
   * Distinct config epochs (as redis-cli gives) spare the nodes settling epoch collisions; a
   * node takes one only while it knows no other, so before the nodes meet.
   */
  async create(masters: number, busPorts: ReadonlyMap<RedisServer, number>): Promise<void> {
    const ids = await Promise.all(
      this.nodes.map(async (node, index) => {
        const epoch = ['CLUSTER', 'SET-CONFIG-EPOCH', String(index + 1)];
        const first = Math.floor((index * SLOTS) / masters);
        const last = Math.floor(((index + 1) * SLOTS) / masters) - 1;
        const slots = ['CLUSTER', 'ADDSLOTSRANGE', String(first), String(last)];
        const commands = index < masters ? [epoch, slots] : [epoch];
        const [id] = await ask(node, ['CLUSTER', 'MYID'], ...commands);
        return String(id);
      }),
    );
    // Every pair meets directly, so no node waits for gossip to hear of another.
    await Promise.all(
      this.nodes.map((node, index) => {
        const others = this.nodes.slice(index + 1);
        const address = (other: RedisServer) => [String(other.port), String(busPorts.get(other))];
        return ask(
          node,
          ...others.map((other) => ['CLUSTER', 'MEET', '127.0.0.1', ...address(other)]),
        );
      }),
    );
    await until(
      'every node to know every other',
      async () => {
        for (const node of this.nodes) {
          const view = parseNodes((await ask(node, ['CLUSTER', 'NODES']))[0]);
          const known = view.filter((entry) => !entry.flags.includes('handshake')).length;
          const reason = `node ${node.port} knows ${known} of ${this.nodes.length} nodes`;
          if (known < this.nodes.length) return { reason };
        }
        return { done: undefined };
      },
      this.waitMs,
    );
    await Promise.all(
      this.nodes
        .slice(masters)
        .map((replica, k) => ask(replica, ['CLUSTER', 'REPLICATE', ids[k % masters] ?? ''])),
    );
    await this.waitUntilHealthy();
  }

  async masters(): Promise<RedisServer[]> {
    const view = parseNodes((await this.#askAny(['CLUSTER', 'NODES']))[0]);
    return view
      .filter((entry) => entry.flags.includes('master') && entry.slots.length > 0)
      .sort((a, b) => (a.slots[0]?.[0] ?? 0) - (b.slots[0]?.[0] ?? 0))
      .map((entry) => this.#node(entry.port));
  }

  async masterOf(key: string): Promise<RedisServer> {
    const [slot, view] = await this.#askAny(['CLUSTER', 'KEYSLOT', key], ['CLUSTER', 'NODES']);
    const owner = parseNodes(view).find((entry) =>
      entry.slots.some(([first, last]) => first <= Number(slot) && Number(slot) <= last),
    );
    if (!owner) throw new Error(`no node owns slot ${slot} (of key ${key})`);
    return this.#node(owner.port);
  }

  async replicasOf(master: RedisServer): Promise<RedisServer[]> {
    const view = parseNodes((await this.#askAny(['CLUSTER', 'NODES']))[0]);
    const id = view.find((entry) => entry.port === master.port)?.id;
    return view
      .filter((entry) => id !== undefined && entry.masterId === id)
      .map((entry) => this.#node(entry.port));
  }

  async failover(replica: RedisServer, mode?: 'FORCE' | 'TAKEOVER'): Promise<void> {
    if (!this.nodes.includes(replica)) {
      throw new Error(`node ${replica.port} is not part of this cluster`);
    }
    await ask(replica, ['CLUSTER', 'FAILOVER', ...(mode ? [mode] : [])]);
    const takenOver = async (): Promise<Progress<void>> => {
      const view = parseNodes((await ask(replica, ['CLUSTER', 'NODES']))[0]);
      const self = view.find((entry) => entry.flags.includes('myself'));
      if (self?.flags.includes('master') && self.slots.length > 0) return this.#health();
      return {
        reason: mode ? 'no master yet' : 'no master yet (without FORCE, its master must answer)',
      };
    };
    await until(`node ${replica.port} to take over`, takenOver, this.waitMs);
  }

  waitUntilHealthy(timeoutMs = this.waitMs): Promise<void> {
    return until('the cluster to be healthy', () => this.#health(), timeoutMs);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /** Whether the cluster is healthy (see {@link RedisCluster.waitUntilHealthy}), or why not. */
  async #health(): Promise<Progress<void>> {
    const running = this.nodes.filter((node) => node.running && !node.paused);
    const live = new Set(running.map((node) => node.port));
    if (running.length === 0) return { reason: 'no node is running' };
    const layouts = new Set<string>();
    for (const node of running) {
      const replies = await ask(
        node,
        ['CLUSTER', 'INFO'],
        ['CLUSTER', 'NODES'],
        ['INFO', 'replication'],
      );
      const [info = '', nodes, replication = ''] = replies.map(String);
      const report = { info, view: parseNodes(nodes), replication };
      const problem = problemIn(report, live, this.nodes.length);
      if (problem) return { reason: `node ${node.port} ${problem}` };
      layouts.add(layoutOf(report.view, live));
    }
    if (layouts.size > 1) return { reason: `the nodes disagree: ${[...layouts].join(' | ')}` };
    return { done: undefined };
  }

  /** Runs `commands` on the first running, unpaused node that answers. */
  async #askAny(...commands: readonly string[][]): Promise<unknown[]> {
    const errors: unknown[] = [];
    for (const node of this.nodes.filter((n) => n.running && !n.paused)) {
      try {
        return await ask(node, ...commands);
      } catch (error) {
        errors.push(error);
      }
    }
    throw new AggregateError(errors, 'no Redis Cluster node answered');
  }

  #node(port: number): RedisServer {
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`node ${port} is not part of this cluster`);
    return node;
  }
}
