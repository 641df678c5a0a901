/** Moving a hash slot and its keys from one master to another, as a reshard does. */
import { ask } from './ask.js';
import { type NodeEntry, SLOTS } from './cluster-checks.js';
import type { RedisServer } from './redis-server.js';

/**
 * A hash slot on its way to another master (see `RedisCluster.beginSlotMove`). Until
 * {@link SlotMove.finish}, the slot is `MIGRATING` on {@link SlotMove.from} and `IMPORTING` on
 * {@link SlotMove.to}: a command whose keys are all still on `from` runs there, one whose keys
 * have all moved gets `ASK` (and runs on `to` after `ASKING`), and a command on several keys
 * that are not all on one side gets `TRYAGAIN`, on either node. Redis cannot tell a key that
 * moved from one that never existed: a script naming a key that does not exist is answered
 * as if that key had moved.
 */
export interface SlotMove {
  readonly slot: number;
  /** The master that served the slot when the move began. */
  readonly from: RedisServer;
  /** The master the slot goes to. */
  readonly to: RedisServer;
  /** `MIGRATE`s every key of the slot still on `from` to `to`; resolves with how many moved. */
  moveKeys(): Promise<number>;
  /**
   * Moves the keys still on `from`, then gives the slot to `to` on every master (`CLUSTER
   * SETSLOT <slot> NODE`, `to` first, as `redis-cli --cluster reshard` does), and resolves
   * once every node agrees (`waitUntilHealthy`). From then on, `from` answers `MOVED`.
   */
  finish(): Promise<void>;
}

/** What a slot move needs of the cluster it runs on. */
export interface SlotMoveCluster {
  readonly nodes: readonly RedisServer[];
  /** `CLUSTER NODES` as the first node that answers sees it. */
  view(): Promise<NodeEntry[]>;
  waitUntilHealthy(): Promise<void>;
}

/** How many keys one `MIGRATE` moves (`redis-cli --cluster reshard` moves 10 by default). */
const KEYS_PER_MIGRATE = 100;

/** How long one `MIGRATE` may take before the source gives up (its own timeout). */
const MIGRATE_TIMEOUT_MS = 5_000;

/** Begins moving `slot` to the master `to`: see {@link SlotMove}. */
export async function beginSlotMove(
  cluster: SlotMoveCluster,
  slot: number,
  to: RedisServer,
): Promise<SlotMove> {
  if (!Number.isSafeInteger(slot) || slot < 0 || slot >= SLOTS) {
    throw new TypeError(
      `Expected \`slot\` to be an integer from 0 to ${SLOTS - 1}, got \`${slot}\` (${typeof slot})`,
    );
  }
  const view = await cluster.view();
  const entryOf = (node: RedisServer) => view.find((entry) => entry.port === node.port);
  const owner = view.find((entry) =>
    entry.slots.some(([first, last]) => first <= slot && slot <= last),
  );
  const from = cluster.nodes.find((node) => node.port === owner?.port);
  const target = entryOf(to);
  if (!owner || !from) throw new Error(`no node of this cluster serves slot ${slot}`);
  if (!cluster.nodes.includes(to) || !target?.flags.includes('master')) {
    throw new Error(`node ${to.port} is not a master of this cluster`);
  }
  if (from === to) throw new Error(`node ${to.port} already serves slot ${slot}`);
  // The target first: a command that gets ASK from the source must be taken there.
  await ask(to, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', owner.id]);
  await ask(from, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', target.id]);

  const moveKeys = async (): Promise<number> => {
    let moved = 0;
    for (;;) {
      const [keys] = await ask(from, [
        'CLUSTER',
        'GETKEYSINSLOT',
        String(slot),
        `${KEYS_PER_MIGRATE}`,
      ]);
      const batch = (keys as string[]).map(String);
      if (batch.length === 0) return moved;
      const address = ['127.0.0.1', String(to.port), '', '0', String(MIGRATE_TIMEOUT_MS)];
      await ask(from, ['MIGRATE', ...address, 'KEYS', ...batch]);
      moved += batch.length;
    }
  };
  const finish = async (): Promise<void> => {
    await moveKeys();
    const masters = view.filter((entry) => entry.flags.includes('master'));
    const others = masters.filter((entry) => entry.id !== owner.id && entry.id !== target.id);
    const setOwner = ['CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id];
    // The target first (it bumps its config epoch, so that its claim wins), then the source.
    await ask(to, setOwner);
    await ask(from, setOwner);
    for (const entry of others) {
      const node = cluster.nodes.find((n) => n.port === entry.port && n.running && !n.paused);
      if (node) await ask(node, setOwner);
    }
    await cluster.waitUntilHealthy();
  };
  return { slot, from, to, moveKeys, finish };
}
