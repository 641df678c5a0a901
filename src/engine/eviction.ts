import { UnsafeNodeError } from '../errors.js';
import { type LockerEmitter, warn } from './events.js';
import type { ServerInspection } from './node-identity.js';

/**
 * What a node's `INFO` says about eviction, when it can drop lock keys: with `maxmemory` set,
 * every policy but `noeviction` may evict them (`volatile-*` picks keys with a TTL, as every
 * lock key has; `allkeys-*` also fence counters), and a lock whose key was evicted can be
 * taken by a second holder while the first still holds it. `undefined` when it is safe. For
 * a Redis Cluster, the first of {@link evictionRisks}.
 */
export function evictionRisk(info: string): string | undefined {
  return evictionRisks(info)[0];
}

/**
 * The risk of each server whose `INFO` is in `info` and may evict lock keys (see
 * {@link evictionRisk}). A Redis Cluster answers with the INFO of each of its masters, one
 * after the other: each risk then names its master (`master 10.0.0.2:6379 (slots
 * 5461-10922): ...`), so that the operator knows which one to fix.
 */
export function evictionRisks(info: string): string[] {
  return risksIn(info).map((risk) => risk.message);
}

/**
 * Each risk of {@link evictionRisks}, with what makes it the same risk when read again: its
 * server and policy, not the slots its master serves, which a reshard changes.
 */
function risksIn(info: string): { readonly message: string; readonly same: string }[] {
  const servers = info.split(/^(?=# Server\r?$)/m);
  return servers.flatMap((server) => {
    const risk = policyRisk(server);
    if (risk === undefined) return [];
    const master = masterOf(server);
    if (master === undefined && servers.length === 1) return [{ message: risk, same: risk }];
    const message = `${master?.name ?? 'a master'}: ${risk}`;
    return [{ message, same: `${master?.address ?? ''} ${risk}` }];
  });
}

/** One server's eviction risk, from its part of an INFO reply. */
function policyRisk(info: string): string | undefined {
  const maxmemory = Number(/^maxmemory:(\d+)/m.exec(info)?.[1] ?? 0);
  const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  if (maxmemory === 0 || policy === undefined || policy === 'noeviction') return undefined;
  // volatile-* picks among keys with a TTL: every lock key, but no fence counter.
  const keys = policy.startsWith('volatile-') ? 'lock keys' : 'lock keys and fence counters';
  return (
    `maxmemory-policy ${policy} (maxmemory ${maxmemory} bytes) may evict ${keys}, and an ` +
    'evicted lock can be taken by a second holder: use noeviction on lock nodes'
  );
}

/**
 * Which master of a cluster a server's INFO comes from: the address and slots its adapter
 * wrote in (see `masterInfo`), else its port; `undefined` for a server not in a cluster.
 */
function masterOf(info: string): { name: string; address: string } | undefined {
  const named = /^distlock_master:(\S+)(?: slots (\S+))?/m.exec(info);
  if (named) {
    const [, address = '', slots] = named;
    return { name: `master ${address}${slots ? ` (slots ${slots})` : ''}`, address };
  }
  if (!/^cluster_enabled:1/m.test(info)) return undefined;
  const port = /^tcp_port:(\d+)/m.exec(info)?.[1];
  return port === undefined ? undefined : { name: `master on port ${port}`, address: port };
}

/** Why a node whose eviction policy cannot be read is a risk too, and what each mode can do. */
const UNCHECKED =
  'its eviction policy cannot be read (INFO is renamed or denied), so it may evict lock keys';
const UNCHECKED_ADVICE = {
  refuse: `${UNCHECKED}: grant +info, or use onEvictionRisk: 'warn' to lock anyway`,
  warn: `${UNCHECKED}: grant +info so that it can be checked`,
};

/**
 * The locker's check of each server's eviction settings, each time a node's `INFO` is read:
 * with `'refuse'`, an error that keeps every acquisition from being granted, also when the
 * policy cannot be read; with `'warn'`, a `warning` event (or, when nobody listens, a process
 * warning: never silent) for each risk the node's previous INFO did not show (a Cluster's
 * masters are read again, see `NodeIdentities`: a risk is reported once while it lasts).
 */
export function evictionCheck(
  onEvictionRisk: 'warn' | 'refuse',
  nodeName: (index: number) => string,
  events: LockerEmitter,
): ServerInspection {
  const reported = new Map<number, ReadonlySet<string>>();
  return (index, info) => {
    const node = nodeName(index);
    if (info === undefined) {
      const risk = UNCHECKED_ADVICE[onEvictionRisk];
      if (onEvictionRisk === 'refuse') return new UnsafeNodeError(node, risk);
      warn(events, node, 'EVICTION_UNCHECKED', risk);
      return undefined;
    }
    const risks = risksIn(info);
    if (risks.length === 0) {
      reported.delete(index);
      return undefined;
    }
    if (onEvictionRisk === 'refuse') {
      return new UnsafeNodeError(node, risks.map((risk) => risk.message).join('; '));
    }
    const before = reported.get(index);
    for (const { message, same } of risks) {
      if (!before?.has(same)) warn(events, node, 'EVICTION_RISK', message);
    }
    reported.set(index, new Set(risks.map((risk) => risk.same)));
    return undefined;
  };
}
