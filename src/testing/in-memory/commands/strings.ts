/** String commands: GET, SET (NX, XX, PX, EX, KEEPTTL), INCR. */
import { fitsLongLong } from '../numbers.js';
import { bulk, integer, NIL, notModelled, OK, type Reply, ReplyError, SYNTAX } from '../reply.js';
import { type Command, type CommandContext, expiryFrom, is, longLongArg } from './command.js';

const get: Command = {
  name: 'get',
  arity: 2,
  run({ keyspace }, [key]) {
    const value = keyspace.string(key as string);
    return value === undefined ? NIL : bulk(value);
  },
};

interface SetOptions {
  nx: boolean;
  xx: boolean;
  keepTtl: boolean;
  unit: 'ex' | 'px' | undefined;
  expire: string | undefined;
}

/** Redis 7.0's `parseExtendedStringArgumentsOrReply`, for the options modelled here. */
function setOptions(args: readonly string[]): SetOptions {
  const options: SetOptions = {
    nx: false,
    xx: false,
    keepTtl: false,
    unit: undefined,
    expire: undefined,
  };
  for (let j = 2; j < args.length; j++) {
    const option = args[j];
    const next = args[j + 1];
    if (is(option, 'nx') && !options.xx) options.nx = true;
    else if (is(option, 'xx') && !options.nx) options.xx = true;
    else if (is(option, 'keepttl') && options.unit === undefined) options.keepTtl = true;
    else if ((is(option, 'ex') || is(option, 'px')) && !options.keepTtl && next !== undefined) {
      const unit = is(option, 'ex') ? 'ex' : 'px';
      if (options.unit !== undefined && options.unit !== unit) throw new ReplyError(SYNTAX);
      options.unit = unit;
      options.expire = next;
      j++;
    } else if (is(option, 'get') || is(option, 'exat') || is(option, 'pxat')) {
      notModelled(`SET ${option?.toUpperCase()}`);
    } else {
      throw new ReplyError(SYNTAX);
    }
  }
  return options;
}

const set: Command = {
  name: 'set',
  arity: -3,
  run({ keyspace, nowMs }, args) {
    const [key, value] = args as [string, string];
    const options = setOptions(args);
    let expiresAt: bigint | undefined;
    if (options.expire !== undefined) {
      const amount = longLongArg(options.expire);
      const invalid = `ERR invalid expire time in 'set' command`;
      const seconds = options.unit === 'ex';
      if (amount <= 0n || (seconds && amount > (2n ** 63n - 1n) / 1000n)) {
        throw new ReplyError(invalid);
      }
      expiresAt = expiryFrom(nowMs(), seconds ? amount * 1000n : amount, 'set');
    }
    const found = keyspace.get(key) !== undefined;
    if ((options.nx && found) || (options.xx && !found)) return NIL;
    keyspace.set(key, { type: 'string', value }, options.keepTtl);
    if (expiresAt !== undefined) keyspace.setExpiry(key, expiresAt);
    return OK;
  },
};

const incr: Command = {
  name: 'incr',
  arity: 2,
  run({ keyspace }: CommandContext, [key]): Reply {
    const current = keyspace.string(key as string);
    const value = current === undefined ? 0n : longLongArg(current);
    if (!fitsLongLong(value + 1n)) {
      throw new ReplyError('ERR increment or decrement would overflow');
    }
    keyspace.set(key as string, { type: 'string', value: String(value + 1n) }, true);
    return integer(value + 1n);
  },
};

export const STRING_COMMANDS: readonly Command[] = [get, set, incr];
