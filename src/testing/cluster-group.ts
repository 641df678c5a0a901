import { ask } from './ask.js';
import { layoutOf, type NodeEntry, parseNodes, problemIn, SLOTS } from './cluster-checks.js';
import type { RedisServer } from './redis-server.js';
import { beginSlotMove, type SlotMove } from './slot-move.js';
import { type Progress, until } from './until.js';

/** A running `RedisCluster`: made by `startRedisCluster`, which then calls `create`. */
export class LiveCluster {
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

  async moveSlot(slot: number, to: RedisServer): Promise<void> {
    await (await this.beginSlotMove(slot, to)).finish();
  }

  beginSlotMove(slot: number, to: RedisServer): Promise<SlotMove> {
    const view = async (): Promise<NodeEntry[]> =>
      parseNodes((await this.#askAny(['CLUSTER', 'NODES']))[0]);
    return beginSlotMove(
      { nodes: this.nodes, view, waitUntilHealthy: () => this.waitUntilHealthy() },
      slot,
      to,
    );
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /** Whether the cluster is healthy (see `RedisCluster.waitUntilHealthy`), or why not. */
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
