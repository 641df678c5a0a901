/** Hash commands: HSET, HGET, HMGET, HDEL, HGETALL (fields in the order they were added). */
import { array, bulk, bulks, integer, NIL, ReplyError } from '../reply.js';
import type { Command } from './command.js';

const hset: Command = {
  name: 'hset',
  arity: -4,
  run({ keyspace }, [key, ...pairs]) {
    if (pairs.length % 2 === 1) {
      throw new ReplyError(`ERR wrong number of arguments for 'hset' command`);
    }
    let hash = keyspace.hash(key as string);
    if (!hash) {
      hash = new Map();
      keyspace.set(key as string, { type: 'hash', value: hash });
    }
    let created = 0;
    for (let i = 0; i < pairs.length; i += 2) {
      if (!hash.has(pairs[i] as string)) created++;
      hash.set(pairs[i] as string, pairs[i + 1] as string);
    }
    return integer(created);
  },
};

const hget: Command = {
  name: 'hget',
  arity: 3,
  run({ keyspace }, [key, field]) {
    const value = keyspace.hash(key as string)?.get(field as string);
    return value === undefined ? NIL : bulk(value);
  },
};

const hmget: Command = {
  name: 'hmget',
  arity: -3,
  run({ keyspace }, [key, ...fields]) {
    const hash = keyspace.hash(key as string);
    return array(fields.map((field) => (hash?.has(field) ? bulk(hash.get(field) ?? '') : NIL)));
  },
};

const hdel: Command = {
  name: 'hdel',
  arity: -3,
  run({ keyspace }, [key, ...fields]) {
    const hash = keyspace.hash(key as string);
    if (!hash) return integer(0);
    const deleted = fields.filter((field) => hash.delete(field)).length;
    keyspace.dropIfEmpty(key as string);
    return integer(deleted);
  },
};

const hgetall: Command = {
  name: 'hgetall',
  arity: 2,
  run: ({ keyspace }, [key]) => bulks([...(keyspace.hash(key as string) ?? [])].flat()),
};

export const HASH_COMMANDS: readonly Command[] = [hset, hget, hmget, hdel, hgetall];
