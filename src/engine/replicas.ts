import type { Clock } from '../clock.js';
import type { RedisConnection } from '../driver/connection.js';

/**
 * Time kept back from a WAIT's own timeout, so that its reply beats the per-node timeout:
 * Redis notices a timed-out WAIT on its next tick, up to 1000 / hz (100 ms by default)
 * late. Confirmations end a WAIT at once; only a WAIT that times out needs the margin.
 */
const REPLY_MARGIN_MS = 110;

/**
 * After a node granted a lock write, waits (Redis `WAIT`) until `replicas` of its replicas
 * have it too; rejects when fewer confirm before `until` (on `clock`). The node's vote
 * counts only then: a replica promoted by a failover (Sentinel) without the lock would let
 * a second holder in.
 */
export async function awaitReplicas(
  node: RedisConnection,
  replicas: number,
  clock: Clock,
  until: number,
): Promise<void> {
  if (replicas === 0) return;
  const leftMs = Math.max(1, Math.floor(until - clock.now() - REPLY_MARGIN_MS));
  const acknowledged = Number(await node.send('WAIT', [replicas, leftMs], leftMs));
  if (!(acknowledged >= replicas)) {
    throw new Error(
      `${acknowledged} of the ${replicas} replica(s) required (replicaAcks) confirmed the lock ` +
        `write within ${leftMs} ms`,
    );
  }
}
