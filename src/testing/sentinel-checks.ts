import { ask } from './ask.js';
import type { RedisServer } from './redis-server.js';
import type { Progress } from './until.js';

/** The processes of a Sentinel group: what the checks below look at. */
export interface SentinelTopology {
  readonly masterName: string;
  readonly servers: readonly RedisServer[];
  readonly sentinels: readonly RedisServer[];
}

/** One instance as a reply lists it: `flags`, `port`, `master-link-status`, `role`, … */
type Fields = Readonly<Record<string, string | undefined>>;

/** A flat `[field, value, field, value, …]` reply (RESP2), as an object. */
function fields(reply: unknown): Fields {
  const flat = Array.isArray(reply) ? reply.map(String) : [];
  const entries = flat.flatMap((field, i) => (i % 2 === 0 ? [[field, flat[i + 1]]] : []));
  return Object.fromEntries(entries);
}

/** `INFO replication` of a data node: `role`, `master_port`, `master_link_status`, … */
async function replication(node: RedisServer): Promise<Fields> {
  const [info] = await ask(node, ['INFO', 'replication']).catch((error: unknown) => {
    throw new Error(`node ${node.port} did not answer: ${error}`);
  });
  return Object.fromEntries(
    String(info)
      .split('\r\n')
      .map((line) => line.split(':', 2)),
  );
}

async function masterPortBy(sentinel: RedisServer, masterName: string): Promise<number> {
  const [address] = await ask(sentinel, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName]);
  if (!Array.isArray(address)) throw new Error(`sentinel ${sentinel.port} knows no ${masterName}`);
  return Number(address[1]);
}

function serverAt(group: SentinelTopology, port: number): RedisServer {
  const server = group.servers.find((s) => s.port === port);
  if (!server) throw new Error(`the sentinels report master ${port}, not a node of this group`);
  return server;
}

const reachable = (nodes: readonly RedisServer[]) => nodes.filter((n) => n.running && !n.paused);

/** The master most running, unpaused sentinels report (they differ only during a failover). */
export async function reportedMaster(group: SentinelTopology): Promise<RedisServer> {
  const answers = await Promise.allSettled(
    reachable(group.sentinels).map((sentinel) => masterPortBy(sentinel, group.masterName)),
  );
  const votes = new Map<number, number>();
  for (const answer of answers) {
    if (answer.status === 'fulfilled') votes.set(answer.value, (votes.get(answer.value) ?? 0) + 1);
  }
  if (votes.size === 0) {
    const errors = answers.flatMap((a) => (a.status === 'rejected' ? [a.reason] : []));
    throw new AggregateError(errors, `no sentinel reported the master of ${group.masterName}`);
  }
  const [port] = [...votes].reduce((best, entry) => (entry[1] > best[1] ? entry : best));
  return serverAt(group, port);
}

/** Whether the unpaused sentinels all report a master other than `old`, and all is healthy. */
export async function failoverProgress(
  group: SentinelTopology,
  old: RedisServer,
): Promise<Progress<RedisServer>> {
  const sentinels = reachable(group.sentinels);
  const ports = await Promise.all(sentinels.map((s) => masterPortBy(s, group.masterName)));
  const [port = old.port] = ports;
  if (ports.some((p) => p !== port)) return { reason: `sentinels report masters ${ports}` };
  if (port === old.port) return { reason: `the sentinels still report master ${port}` };
  const health = await healthProgress(group);
  return 'done' in health ? { done: serverAt(group, port) } : health;
}

/** See {@link RedisSentinelGroup.waitUntilHealthy}. */
export async function healthProgress(group: SentinelTopology): Promise<Progress<void>> {
  const sentinels = reachable(group.sentinels);
  if (sentinels.length === 0) return { reason: 'no sentinel is running (unpaused)' };
  const views = await Promise.all(
    sentinels.map((sentinel) =>
      ask(
        sentinel,
        ['SENTINEL', 'MASTER', group.masterName],
        ['SENTINEL', 'SENTINELS', group.masterName],
        ['SENTINEL', 'REPLICAS', group.masterName],
      ).catch((error: unknown) => {
        throw new Error(`sentinel ${sentinel.port} did not answer: ${error}`);
      }),
    ),
  );
  const master = serverAt(group, Number(fields(views[0]?.[0]).port));
  if (!master.running || master.paused) return { reason: `master ${master.port} is down` };
  const replicas = reachable(group.servers).filter((s) => s !== master);
  for (const [index, [masterReply, sentinelsReply, replicasReply]] of views.entries()) {
    const self = sentinels[index] as RedisServer;
    const peers = sentinels.filter((s) => s !== self);
    const problem = sentinelViewProblem(master, peers, replicas, {
      master: fields(masterReply),
      sentinels: Array.isArray(sentinelsReply) ? sentinelsReply.map(fields) : [],
      replicas: Array.isArray(replicasReply) ? replicasReply.map(fields) : [],
    });
    if (problem) return { reason: `sentinel ${self.port} ${problem}` };
  }
  // The sentinels' view lags by up to one INFO period; the nodes themselves are checked too.
  return replicationProgress(master, replicas);
}

/** What a sentinel lists for one master name. */
interface SentinelView {
  readonly master: Fields;
  readonly sentinels: readonly Fields[];
  readonly replicas: readonly Fields[];
}

/** What one sentinel does not see as healthy, if anything. */
function sentinelViewProblem(
  master: RedisServer,
  peers: readonly RedisServer[],
  replicas: readonly RedisServer[],
  view: SentinelView,
): string | undefined {
  if (Number(view.master.port) !== master.port) {
    return `disagrees on the master: ${view.master.port}, not ${master.port}`;
  }
  if (view.master.flags !== 'master') return `flags master ${master.port} ${view.master.flags}`;
  for (const peer of peers) {
    const entry = view.sentinels.find((s) => Number(s.port) === peer.port);
    if (entry?.flags !== 'sentinel') return `does not see sentinel ${peer.port}`;
  }
  for (const replica of replicas) {
    const entry = view.replicas.find((r) => Number(r.port) === replica.port);
    const linked =
      entry?.flags === 'slave' &&
      entry['master-link-status'] === 'ok' &&
      Number(entry['master-port']) === master.port;
    if (!linked) return `does not see replica ${replica.port} linked to ${master.port}`;
  }
  return undefined;
}

/** Whether `master` reports role:master and each of `replicas` is in sync with it. */
export async function replicationProgress(
  master: RedisServer,
  replicas: readonly RedisServer[],
): Promise<Progress<void>> {
  if ((await replication(master)).role !== 'master') {
    return { reason: `${master.port} does not report role:master` };
  }
  for (const replica of replicas) {
    const info = await replication(replica);
    if (info.role !== 'slave' || Number(info.master_port) !== master.port) {
      return { reason: `${replica.port} does not replicate ${master.port}` };
    }
    if (info.master_link_status !== 'up') return { reason: `${replica.port} is syncing` };
  }
  return { done: undefined };
}
