/**
 * Every distlock script, found by reading every `lua/` folder of src (a new script is covered as soon as
 * it has an input generator here; the test fails until it does), and for each a generator
 * of plausible inputs drawn from the universe. The KEYS and ARGV sent are those the script's
 * own typed call builds.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Random } from '../../simulation/random.js';
import type { RedisConnection } from '../../src/driver/connection.js';
import { queueKeys, readWriteKeys } from '../../src/keys.js';
import type { Script } from '../../src/lua/script.js';
import { CHANNELS, LOCKS, READ_WRITE, RESOURCES, SEMAPHORE, TOKENS } from './universe.js';

// biome-ignore lint/suspicious/noExplicitAny: scripts of every input type share one list
export type AnyScript = Script<any, unknown>;

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Every `defineScript` export of a `lua/` folder of src: each kind's, fencing's, the shared one. */
export async function findScripts(): Promise<AnyScript[]> {
  const found = new Map<string, AnyScript>();
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((f) => /(^|\/)lua\/[^/]+\.ts$/.test(f))
    .sort();
  for (const file of files) {
    const module: Record<string, unknown> = await import(pathToFileURL(join(SRC, file)).href);
    for (const value of Object.values(module)) {
      if (isScript(value)) found.set(value.name, value);
    }
  }
  return [...found.values()];
}

function isScript(value: unknown): value is AnyScript {
  const v = value as Partial<AnyScript> | null;
  return typeof v?.lua === 'string' && typeof v.sha1 === 'string' && typeof v.run === 'function';
}

/** The EVAL arguments (numkeys, KEYS, ARGV) that `script.run(…, input)` sends. */
export function evalArgs(script: AnyScript, input: unknown): (string | number)[] {
  let sent: readonly (string | number)[] | undefined;
  const capture: RedisConnection = {
    name: 'capture',
    send(_command, args) {
      sent = args;
      return new Promise(() => {}); // never answered: only the request matters
    },
    close: async () => {},
  };
  void script.run(capture, input, 0);
  if (!sent) throw new Error(`${script.name} sent nothing`);
  return sent.slice(1);
}

const ms = (r: Random) => (r.chance(0.8) ? r.int(1, 400) : r.int(1, 5_000));
const attempt = (r: Random) => r.int(1, 3);
const unanswered = (r: Random) => [1, 2].filter(() => r.chance(0.3));
const line = (r: Random) => ({
  ticket: r.int(1, 6),
  waiterTimeoutMs: ms(r),
  wakeChannel: `PUBLISH ${r.pick(CHANNELS)}`,
  fair: r.chance(0.5),
});
const lock = (r: Random) => ({
  key: r.pick(LOCKS),
  token: r.pick(TOKENS),
  attempt: attempt(r),
  ttlMs: ms(r),
});
const fence = (r: Random) =>
  r.chance(0.9) ? BigInt(r.int(0, 6)) : 10n ** 30n + BigInt(r.int(0, 1));

/** Input generators by script name. */
export const INPUTS: Record<string, (r: Random) => unknown> = {
  'acquire-fenced': (r) => ({ ...lock(r), fenceFromClock: r.chance(0.5) }),
  'acquire-in-line': (r) => ({
    ...lock(r),
    fencing: r.chance(0.5),
    fenceFromClock: r.chance(0.5),
    line: line(r),
  }),
  reclaim: lock,
  extend: lock,
  release: (r) => ({ ...lock(r), announce: r.chance(0.6) }),
  'leave-queue': (r) => ({ key: r.pick(LOCKS), token: r.pick(TOKENS), granted: r.chance(0.3) }),
  'raise-fence': (r) => ({ ...lock(r), fence: fence(r) }),
  // Its own key mostly; a lock's key at times (a value it cannot read counts as none).
  'record-lease': (r) => ({
    key: r.chance(0.7) ? 'distlock:longest-lease' : r.pick(LOCKS),
    ttlMs: ms(r),
    server: r.pick(['a'.repeat(40), `${'b'.repeat(40)},${'c'.repeat(40)}`]),
  }),
  'inspect-lock': (r) => ({ key: r.pick(LOCKS) }),
  'inspect-holds': (r) => {
    const key = r.pick([SEMAPHORE, readWriteKeys(READ_WRITE).readers, r.pick(LOCKS)]);
    return { key, deadlines: queueKeys(r.chance(0.5) ? SEMAPHORE : READ_WRITE).deadlines };
  },
  'force-release': (r) => ({ key: r.pick(LOCKS) }),
  proclaim: (r) => {
    const { key, token, attempt: held } = lock(r);
    const [version, value, channel] = [r.int(1, 3), r.pick(['a', 'b']), r.pick(CHANNELS)];
    return {
      key,
      leaderKey: `${key}:leader`,
      token,
      attempt: held,
      term: fence(r),
      version,
      value,
      channel,
    };
  },
  'read-leader': (r) => {
    const key = r.pick(LOCKS);
    return { key, leaderKey: `${key}:leader` };
  },
  announce: (r) => ({ leaderKey: `${r.pick(LOCKS)}:leader`, channel: r.pick(CHANNELS) }),
  'fenced-read': (r) => ({ key: r.pick(RESOURCES), fence: fence(r) }),
  'fenced-write': (r) => ({ key: r.pick(RESOURCES), fence: fence(r), value: r.pick(['v1', 'v2']) }),
  'semaphore-take': (r) => ({
    ...lock(r),
    key: SEMAPHORE,
    unanswered: unanswered(r),
    permits: r.int(1, 3),
    line: r.chance(0.7) ? line(r) : undefined,
  }),
  'semaphore-extend': (r) => ({ ...lock(r), key: SEMAPHORE }),
  'semaphore-release': (r) => ({
    key: SEMAPHORE,
    token: r.pick(TOKENS),
    attempt: attempt(r),
    unanswered: unanswered(r),
    end: r.pick(['release', 'undo', 'leave', 'leave-granted']),
    line: r.chance(0.5) ? line(r) : undefined,
  }),
  'read-write-take': (r) => ({
    ...lock(r),
    key: READ_WRITE,
    unanswered: unanswered(r),
    mode: r.pick(['read', 'write']),
    line: r.chance(0.7) ? line(r) : undefined,
  }),
  'read-write-extend': (r) => ({ ...lock(r), key: READ_WRITE, mode: r.pick(['read', 'write']) }),
  'read-write-release': (r) => ({
    key: READ_WRITE,
    token: r.pick(TOKENS),
    attempt: attempt(r),
    unanswered: unanswered(r),
    mode: r.pick(['read', 'write', 'leave']),
    announce: r.chance(0.6),
  }),
};
