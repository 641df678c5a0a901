import { describe, expect, it } from 'vitest';
import { LockerEmitter } from '../../src/engine/events.js';
import { evictionCheck } from '../../src/engine/eviction.js';

/** One master's INFO as a Cluster adapter passes it on: named, with its policy. */
function master(address: string, slots: string, policy: string): string {
  return [
    '# Server',
    `distlock_master:${address} slots ${slots}`,
    `run_id:${'a'.repeat(40)}`,
    '# Memory',
    'maxmemory:1048576',
    `maxmemory_policy:${policy}`,
    '',
  ].join('\r\n');
}

describe("a Cluster's eviction check", () => {
  it('warns once per master and policy, whatever slots it serves, and again once it came back', () => {
    const events = new LockerEmitter();
    const warnings: string[] = [];
    events.on('warning', ({ message }) => warnings.push(message));
    const inspect = evictionCheck('warn', () => 'cluster', events);
    const safe = master('10.0.0.1:6379', '0-5460', 'noeviction');
    inspect(0, safe + master('10.0.0.2:6379', '5461-10922', 'allkeys-lru'));
    inspect(0, safe + master('10.0.0.2:6379', '5461-10923', 'allkeys-lru')); // a slot moved
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^master 10\.0\.0\.2:6379 \(slots 5461-10922\): maxmemory-policy allkeys-lru/,
    );
    inspect(0, safe + master('10.0.0.2:6379', '5461-10922', 'volatile-lru')); // another policy
    inspect(0, safe + master('10.0.0.3:6379', '5461-10922', 'volatile-lru')); // a replica took over
    inspect(0, safe);
    inspect(0, safe + master('10.0.0.3:6379', '5461-10922', 'volatile-lru'));
    expect(warnings.map((w) => w.split(' ')[1])).toEqual([
      '10.0.0.2:6379',
      '10.0.0.2:6379',
      '10.0.0.3:6379',
      '10.0.0.3:6379',
    ]);
  });
});
