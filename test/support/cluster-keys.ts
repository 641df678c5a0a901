import type { RedisCluster, RedisServer } from '../../src/testing/index.js';

/** How many keys {@link resourceWhere} tries: a master of a third of the slots serves one of 3. */
const KEYS_TRIED = 200;

/**
 * A resource (`<name><i>`) whose lock key's master, as `cluster` names it, passes `wanted`.
 * Bounded: each look opens a connection, and a search that cannot succeed (the cluster's view
 * changing meanwhile) must fail its test, not loop on in the background past its timeout.
 */
export async function resourceWhere(
  cluster: RedisCluster,
  wanted: (owner: RedisServer) => boolean,
  name = 'r',
): Promise<string> {
  const owners = new Set<number>();
  for (let i = 0; i < KEYS_TRIED; i++) {
    const owner = await cluster.masterOf(`distlock:{${name}${i}}`);
    if (wanted(owner)) return `${name}${i}`;
    owners.add(owner.port);
  }
  throw new Error(
    `none of ${KEYS_TRIED} keys has the master wanted; their masters: ${[...owners].join(', ')}`,
  );
}
