/** Commands on keys of any type: DEL, EXISTS, TYPE, KEYS, PEXPIRE, PTTL, PEXPIRETIME. */
import { bulks, integer, notModelled, type Reply, ReplyError, status } from '../reply.js';
import { type Command, expiryFrom, is, longLongArg } from './command.js';

const del: Command = {
  name: 'del',
  arity: -2,
  run: ({ keyspace }, keys) => integer(keys.filter((key) => keyspace.delete(key)).length),
};

const exists: Command = {
  name: 'exists',
  arity: -2,
  run: ({ keyspace }, keys) =>
    integer(keys.filter((key) => keyspace.get(key) !== undefined).length),
};

const type: Command = {
  name: 'type',
  arity: 2,
  run: ({ keyspace }, [key]) => status(keyspace.get(key as string)?.type ?? 'none'),
};

const keys: Command = {
  name: 'keys',
  arity: 2,
  run({ keyspace }, [pattern]) {
    if (pattern !== '*') notModelled('KEYS with a pattern other than *');
    return bulks(keyspace.keys());
  },
};

type ExpireFlag = 'nx' | 'xx' | 'gt' | 'lt';

/** Redis 7.0's `parseExtendedExpireArgumentsOrReply`. */
function expireFlags(options: readonly string[]): Set<ExpireFlag> {
  const flags = new Set<ExpireFlag>();
  for (const option of options) {
    const flag = (['nx', 'xx', 'gt', 'lt'] as const).find((name) => is(option, name));
    if (!flag) throw new ReplyError(`ERR Unsupported option ${option}`);
    flags.add(flag);
  }
  if (flags.has('nx') && (flags.has('xx') || flags.has('gt') || flags.has('lt'))) {
    throw new ReplyError('ERR NX and XX, GT or LT options at the same time are not compatible');
  }
  if (flags.has('gt') && flags.has('lt')) {
    throw new ReplyError('ERR GT and LT options at the same time are not compatible');
  }
  return flags;
}

/** Whether the flags let an expiry of `when` replace `current` (-1n: none). */
function flagsAllow(flags: Set<ExpireFlag>, current: bigint, when: bigint): boolean {
  if (flags.has('nx') && current !== -1n) return false;
  if (flags.has('xx') && current === -1n) return false;
  if (flags.has('gt') && (when <= current || current === -1n)) return false;
  if (flags.has('lt') && current !== -1n && when >= current) return false;
  return true;
}

const pexpire: Command = {
  name: 'pexpire',
  arity: -3,
  run({ keyspace, nowMs }, [key, ms, ...options]): Reply {
    const flags = expireFlags(options);
    const now = nowMs();
    const when = expiryFrom(now, longLongArg(ms as string), 'pexpire');
    const current = keyspace.expiresAt(key as string);
    if (current === null) return integer(0);
    if (!flagsAllow(flags, current ?? -1n, when)) return integer(0);
    if (when <= now) keyspace.delete(key as string);
    else keyspace.setExpiry(key as string, when);
    return integer(1);
  },
};

const pttl: Command = {
  name: 'pttl',
  arity: 2,
  run({ keyspace, nowMs }, [key]) {
    const expiresAt = keyspace.expiresAt(key as string);
    if (expiresAt === null) return integer(-2);
    if (expiresAt === undefined) return integer(-1);
    const left = expiresAt - nowMs();
    return integer(left < 0n ? 0n : left);
  },
};

const pexpiretime: Command = {
  name: 'pexpiretime',
  arity: 2,
  run({ keyspace }, [key]) {
    const expiresAt = keyspace.expiresAt(key as string);
    return integer(expiresAt === null ? -2n : (expiresAt ?? -1n));
  },
};

export const KEY_COMMANDS: readonly Command[] = [
  del,
  exists,
  type,
  keys,
  pexpire,
  pttl,
  pexpiretime,
];
