/** Parsing `CLUSTER NODES` and judging the health of a cluster the test kit started. */

/** Hash slots of a Redis Cluster. */
export const SLOTS = 16384;

/** One line of `CLUSTER NODES`. */
export interface NodeEntry {
  readonly id: string;
  readonly port: number;
  readonly flags: readonly string[];
  readonly masterId: string | undefined;
  readonly slots: readonly (readonly [number, number])[];
}

export function parseNodes(reply: unknown): NodeEntry[] {
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
export interface Report {
  readonly info: string;
  readonly view: readonly NodeEntry[];
  readonly replication: string;
}

/** Why `report` shows an unhealthy cluster, if it does; `live` are the running nodes' ports. */
export function problemIn(
  report: Report,
  live: ReadonlySet<number>,
  size: number,
): string | undefined {
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
export function layoutOf(view: readonly NodeEntry[], live: ReadonlySet<number>): string {
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
