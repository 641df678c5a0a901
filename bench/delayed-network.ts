/**
 * The slow-network regime: each node behind a TCP proxy, in a process of its own, that holds
 * every reply back by a few milliseconds (the fault proxy's `delay` mode), as a network
 * between machines would. On loopback a round trip takes tens of µs, so per-operation client
 * work weighs heavily; with a millisecond of network, it hides behind the wait.
 */
import { awaitMessage, forkWorkers } from './child-workers.js';

/** Proxies to `ports`, replies delayed by `delayMs`; resolves to their urls and a stop. */
export async function delayedNetwork(
  ports: readonly number[],
  delayMs: number,
): Promise<{ urls: string[]; stop: () => void }> {
  const [child] = forkWorkers(new URL('./delay-proxies.ts', import.meta.url), 1);
  if (!child) throw new Error('could not start the delaying proxies');
  child.send({ ports, delayMs });
  const ready = await awaitMessage<{ type: 'proxies'; urls: string[] }>(child, 'proxies', 10_000);
  if (!ready) throw new Error('the delaying proxies did not start');
  return { urls: ready.urls, stop: () => child.kill('SIGKILL') };
}
