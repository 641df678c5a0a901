import { UnsafeNodeError } from '../errors.js';
import { type LockerEmitter, warn } from './events.js';
import type { ServerInspection } from './node-identity.js';

/**
 * What a node's `INFO` says about eviction, when it can drop lock keys: with `maxmemory` set,
 * every policy but `noeviction` may evict them (`volatile-*` picks keys with a TTL, as every
 * lock key has; `allkeys-*` also fence counters), and a lock whose key was evicted can be
 * taken by a second holder while the first still holds it. `undefined` when it is safe.
 */
export function evictionRisk(info: string): string | undefined {
  // A Redis Cluster answers with the INFO of each of its masters, one after the other.
  const servers = info.split(/^(?=# Server\r?$)/m);
  if (servers.length > 1) return servers.map(evictionRisk).find((risk) => risk !== undefined);
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

/** Why a node whose eviction policy cannot be read is a risk too, and what each mode can do. */
const UNCHECKED =
  'its eviction policy cannot be read (INFO is renamed or denied), so it may evict lock keys';
const UNCHECKED_ADVICE = {
  refuse: `${UNCHECKED}: grant +info, or use onEvictionRisk: 'warn' to lock anyway`,
  warn: `${UNCHECKED}: grant +info so that it can be checked`,
};

/**
 * The locker's check of each server's eviction settings: with `'refuse'`, an error that keeps
 * every acquisition from being granted, also when the policy cannot be read; with `'warn'`,
 * a `warning` event (or, when nobody listens, a process warning: never silent).
 */
export function evictionCheck(
  onEvictionRisk: 'warn' | 'refuse',
  nodeName: (index: number) => string,
  events: LockerEmitter,
): ServerInspection {
  return (index, info) => {
    const risk = info === undefined ? UNCHECKED_ADVICE[onEvictionRisk] : evictionRisk(info);
    if (risk === undefined) return undefined;
    const node = nodeName(index);
    if (onEvictionRisk === 'refuse') return new UnsafeNodeError(node, risk);
    warn(events, node, info === undefined ? 'EVICTION_UNCHECKED' : 'EVICTION_RISK', risk);
    return undefined;
  };
}
