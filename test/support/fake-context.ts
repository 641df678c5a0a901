import type { Clock } from '../../src/clock.js';
import { type LockerSettings, lockerSettings } from '../../src/config/options.js';
import type { RedisConnection } from '../../src/driver/connection.js';
import { StallGuard } from '../../src/driver/stall-guard.js';
import type { LockContext } from '../../src/engine/context.js';
import { LockerEmitter } from '../../src/engine/events.js';
import { NodeIdentities } from '../../src/engine/node-identity.js';
import { Shutdown } from '../../src/engine/shutdown.js';
import { WakeUps } from '../../src/engine/wake-ups.js';

/** A clock that moves only when told. */
export interface FakeClock extends Clock {
  advance(ms: number): void;
}

export function fakeClock(startMs = 1_000): FakeClock {
  let now = startMs;
  return { now: () => now, advance: (ms) => (now += ms) };
}

/**
 * A locker's context over `connections` (scripted nodes, usually) for unit tests of the
 * engine: real services around them, no pub/sub, every connection already open. `settings`
 * are locker options (`nodeTimeoutMs`...), checked as a locker checks them.
 */
export function fakeContext(
  connections: readonly RedisConnection[],
  { clock = fakeClock(), ...options }: { clock?: Clock } & Partial<LockerSettingsInput> = {},
): LockContext {
  const settings: LockerSettings = lockerSettings({ nodes: ['redis://unused:1'], ...options });
  return {
    nodes: connections.map((connection) => new StallGuard(connection)),
    settings,
    clock,
    events: new LockerEmitter(),
    wakeUps: new WakeUps([], { prefix: 'distlock:', id: 'test', warn: () => {} }),
    shutdown: new Shutdown(),
    identities: new NodeIdentities(connections.length),
    connected: () => undefined,
    startedAt: clock.now(),
  };
}

type LockerSettingsInput = Omit<Parameters<typeof lockerSettings>[0], 'nodes'>;
