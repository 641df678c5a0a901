/** Child process of bench/delayed-network.ts: one delaying proxy per port, until killed. */
import { FaultProxy } from '../src/testing/index.js';

process.once('message', async (message: { ports: number[]; delayMs: number }) => {
  const proxies = await Promise.all(message.ports.map((port) => FaultProxy.start(port)));
  for (const proxy of proxies) proxy.set({ mode: 'delay', delayMs: message.delayMs });
  process.send?.({ type: 'proxies', urls: proxies.map((proxy) => proxy.url) });
});
