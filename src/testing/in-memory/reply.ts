/**
 * A reply as Redis 7.0 writes it in RESP2, with the kind of each part kept (a status is not a
 * bulk string, an integer is exact), so that the differential test can compare replies
 * exactly. Strings are byte strings (see bytes.ts).
 */
import { textOf } from './bytes.js';

export type Reply =
  | { readonly kind: 'status'; readonly value: string }
  | { readonly kind: 'error'; readonly value: string }
  | { readonly kind: 'integer'; readonly value: bigint }
  | { readonly kind: 'bulk'; readonly value: string }
  | { readonly kind: 'nil' }
  | { readonly kind: 'array'; readonly value: readonly Reply[] };

export const OK: Reply = { kind: 'status', value: 'OK' };
export const NIL: Reply = { kind: 'nil' };

export const status = (value: string): Reply => ({ kind: 'status', value });
export const bulk = (value: string): Reply => ({ kind: 'bulk', value });
export const array = (value: readonly Reply[]): Reply => ({ kind: 'array', value });
export const bulks = (values: readonly string[]): Reply => array(values.map(bulk));
export const integer = (value: bigint | number): Reply => ({
  kind: 'integer',
  value: BigInt(value),
});

/**
 * An error reply, thrown by a command and caught by the node, which answers with it. `value`
 * is the whole line without its `-`: it starts with the code (`ERR`, `WRONGTYPE`...).
 */
export class ReplyError extends Error {
  readonly reply: Reply;
  constructor(line: string) {
    super(line);
    this.name = 'ReplyError';
    this.reply = { kind: 'error', value: line };
  }
}

export const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
export const NOT_INTEGER = 'ERR value is not an integer or out of range';
export const SYNTAX = 'ERR syntax error';

/** Throws: the command names something the simulated node does not model. */
export function notModelled(what: string): never {
  throw new ReplyError(`ERR distlock's simulated node does not model ${what}`);
}

/**
 * What a `RedisConnection` resolves with (see src/driver/connection.ts): strings decoded as
 * UTF-8, integers as numbers, nil as `null`, arrays as arrays. An error reply is returned as
 * an `Error` whose message is its line, for the caller to reject with.
 */
export function toConnectionValue(reply: Reply): unknown {
  switch (reply.kind) {
    case 'status':
    case 'bulk':
      return textOf(reply.value);
    case 'integer':
      return Number(reply.value);
    case 'nil':
      return null;
    case 'error':
      return new Error(textOf(reply.value));
    case 'array':
      return reply.value.map(toConnectionValue);
  }
}
