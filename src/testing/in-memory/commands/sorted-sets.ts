/**
 * Sorted set commands: ZADD (NX, XX, GT, LT, CH), ZREM, ZSCORE, ZCARD, ZRANK, ZRANGE by rank
 * and ZRANGEBYSCORE (WITHSCORES), ZCOUNT, ZREMRANGEBYSCORE.
 */
import { formatDouble, parseScore, parseScoreBound } from '../numbers.js';
import {
  array,
  bulk,
  integer,
  NIL,
  notModelled,
  type Reply,
  ReplyError,
  SYNTAX,
} from '../reply.js';
import { type Scored, SortedSet } from '../sorted-set.js';
import { type Command, is, longLongArg } from './command.js';

const ZADD_FLAGS = ['nx', 'xx', 'ch', 'gt', 'lt', 'incr'] as const;

const zadd: Command = {
  name: 'zadd',
  arity: -4,
  run({ keyspace }, args): Reply {
    const key = args[0] as string;
    const flags = new Set<string>();
    let at = 1;
    for (let flag = ZADD_FLAGS.find((f) => is(args[at], f)); flag; ) {
      flags.add(flag);
      at++;
      flag = ZADD_FLAGS.find((f) => is(args[at], f));
    }
    const pairs = args.slice(at);
    if (pairs.length === 0 || pairs.length % 2 === 1) throw new ReplyError(SYNTAX);
    const [nx, xx, gt, lt] = ['nx', 'xx', 'gt', 'lt'].map((f) => flags.has(f));
    if (nx && xx) throw new ReplyError('ERR XX and NX options at the same time are not compatible');
    if ((gt && nx) || (lt && nx) || (gt && lt)) {
      throw new ReplyError('ERR GT, LT, and/or NX options at the same time are not compatible');
    }
    if (flags.has('incr')) notModelled('ZADD INCR');
    const entries: Scored[] = [];
    for (let i = 0; i < pairs.length; i += 2) {
      const score = parseScore(pairs[i] as string);
      if (score === undefined) throw new ReplyError('ERR value is not a valid float');
      entries.push({ score, member: pairs[i + 1] as string });
    }
    let set = keyspace.zset(key);
    if (set === undefined) {
      if (xx) return integer(0);
      set = new SortedSet(entries.length, entries[0]?.member.length ?? 0);
      keyspace.set(key, { type: 'zset', value: set });
    }
    let added = 0;
    let updated = 0;
    for (const { member, score } of entries) {
      const current = set.score(member);
      if (current === undefined) {
        if (xx) continue;
        set.set(member, score);
        added++;
      } else if (!nx && !(lt && score >= current) && !(gt && score <= current)) {
        if (score === current) continue;
        set.set(member, score);
        updated++;
      }
    }
    return integer(flags.has('ch') ? added + updated : added);
  },
};

const zrem: Command = {
  name: 'zrem',
  arity: -3,
  run({ keyspace }, [key, ...members]) {
    const set = keyspace.zset(key as string);
    if (!set) return integer(0);
    const removed = members.filter((member) => set.remove(member)).length;
    keyspace.dropIfEmpty(key as string);
    return integer(removed);
  },
};

const zscore: Command = {
  name: 'zscore',
  arity: 3,
  run({ keyspace }, [key, member]) {
    const score = keyspace.zset(key as string)?.score(member as string);
    return score === undefined ? NIL : bulk(formatDouble(score));
  },
};

const zcard: Command = {
  name: 'zcard',
  arity: 2,
  run: ({ keyspace }, [key]) => integer(keyspace.zset(key as string)?.size ?? 0),
};

const zrank: Command = {
  name: 'zrank',
  arity: 3,
  run({ keyspace }, [key, member]) {
    const rank = keyspace.zset(key as string)?.rank(member as string);
    return rank === undefined ? NIL : integer(rank);
  },
};

function scoredReply(entries: readonly Scored[], withScores: boolean): Reply {
  return array(
    entries.flatMap(({ member, score }) =>
      withScores ? [bulk(member), bulk(formatDouble(score))] : [bulk(member)],
    ),
  );
}

/** The options after `key min max` (Redis 7.0's `zrangeGenericCommand`): WITHSCORES. */
function withScores(options: readonly string[], byRank: boolean): boolean {
  let scores = false;
  for (let j = 0; j < options.length; j++) {
    const option = options[j];
    if (is(option, 'withscores')) scores = true;
    else if (is(option, 'limit') && options.length - j - 1 >= 2) notModelled('LIMIT');
    else if (byRank && ['rev', 'bylex', 'byscore'].some((o) => is(option, o))) {
      notModelled(`ZRANGE ${option?.toUpperCase()}`);
    } else throw new ReplyError(SYNTAX);
  }
  return scores;
}

const zrange: Command = {
  name: 'zrange',
  arity: -4,
  run({ keyspace }, [key, start, stop, ...options]) {
    const scores = withScores(options, true);
    let from = longLongArg(start as string);
    let to = longLongArg(stop as string);
    const set = keyspace.zset(key as string);
    if (!set) return array([]);
    const size = BigInt(set.size);
    if (from < 0n) from += size;
    if (to < 0n) to += size;
    if (from < 0n) from = 0n;
    if (from > to || from >= size) return array([]);
    if (to >= size) to = size - 1n;
    return scoredReply(set.byRank(Number(from), Number(to)), scores);
  },
};

function scoreRange(min: string, max: string) {
  const low = parseScoreBound(min);
  const high = parseScoreBound(max);
  if (!low || !high) throw new ReplyError('ERR min or max is not a float');
  return [low.value, low.exclusive, high.value, high.exclusive] as const;
}

const zrangebyscore: Command = {
  name: 'zrangebyscore',
  arity: -4,
  run({ keyspace }, [key, min, max, ...options]) {
    const scores = withScores(options, false);
    const range = scoreRange(min as string, max as string);
    const set = keyspace.zset(key as string);
    return scoredReply(set?.byScore(...range) ?? [], scores);
  },
};

const zcount: Command = {
  name: 'zcount',
  arity: 4,
  run({ keyspace }, [key, min, max]) {
    const range = scoreRange(min as string, max as string);
    return integer(keyspace.zset(key as string)?.byScore(...range).length ?? 0);
  },
};

const zremrangebyscore: Command = {
  name: 'zremrangebyscore',
  arity: 4,
  run({ keyspace }, [key, min, max]) {
    const range = scoreRange(min as string, max as string);
    const set = keyspace.zset(key as string);
    if (!set) return integer(0);
    const removed = set.byScore(...range).filter(({ member }) => set.remove(member)).length;
    keyspace.dropIfEmpty(key as string);
    return integer(removed);
  },
};

export const SORTED_SET_COMMANDS: readonly Command[] = [
  zadd,
  zrem,
  zscore,
  zcard,
  zrank,
  zrange,
  zrangebyscore,
  zcount,
  zremrangebyscore,
];
