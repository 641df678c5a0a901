import { ask } from './ask.js';
import type { RedisServer } from './redis-server.js';

/**
 * Sentinel's own periods, shortened with `SENTINEL DEBUG` (Redis 7.0+; older servers keep the
 * defaults, in brackets, and are only slower):
 * - publish-period [2000]: hello messages, by which sentinels find each other and hear of a
 *   new master. A sentinel also turns a replica that reports role:master back into a replica
 *   after 4 periods; that must stay well above the 1 s in which the sentinel running a
 *   failover sees its promoted replica's new role, or the others undo the promotion.
 * - info-period [10000]: INFO, by which a sentinel sees new replicas, roles and links (a
 *   replica qualifies for a manual failover only if its last INFO is younger than 3 periods);
 * - ask-period [1000]: how often a sentinel asks the others whether the master is down;
 * - tilt-period [30000]: how long a sentinel stays passive after its clock jumped (a paused
 *   sentinel, a stalled machine).
 * ping-period stays 1000: while the master is down, a replica may be promoted only if its last
 * INFO (sent every second then) is younger than 5 ping periods.
 */
const SENTINEL_PERIODS = [
  ...['publish-period', '500'],
  ...['info-period', '500'],
  ...['ask-period', '250'],
  ...['tilt-period', '5000'],
];

/** Shortens the periods of `sentinel`, which forgets them when it restarts. */
export async function shortenPeriods(sentinel: RedisServer): Promise<void> {
  try {
    await ask(sentinel, ['SENTINEL', 'DEBUG', ...SENTINEL_PERIODS]);
  } catch (error) {
    // Before Redis 7.0 there is no SENTINEL DEBUG: the defaults stay.
    if (!/unknown (sentinel )?subcommand/i.test(String(error))) throw error;
  }
}
