import { createHash } from 'node:crypto';
import type { RedisConnection } from '../driver/connection.js';

/** A Lua script with its fixed key count and a parser that types its raw reply. */
export interface Script<Result> {
  readonly name: string;
  readonly lua: string;
  readonly sha1: string;
  readonly numberOfKeys: number;
  readonly parse: (reply: unknown) => Result;
}

/** Declares a script. Every key it touches must be among its `numberOfKeys` KEYS. */
export function defineScript<Result>(definition: {
  name: string;
  numberOfKeys: number;
  lua: string;
  parse: (reply: unknown) => Result;
}): Script<Result> {
  const sha1 = createHash('sha1').update(definition.lua).digest('hex');
  return { ...definition, sha1 };
}

/**
 * Runs `script` on one node: EVALSHA first, and EVAL when the node does not know the script
 * yet (NOSCRIPT after a restart or `SCRIPT FLUSH`). This is the only place that runs Lua.
 */
export function runScript<Result>(
  connection: RedisConnection,
  script: Script<Result>,
  keys: readonly string[],
  args: readonly (string | number)[],
  timeoutMs: number,
): Promise<Result> {
  if (keys.length !== script.numberOfKeys) {
    return Promise.reject(
      new Error(`script ${script.name} takes ${script.numberOfKeys} key(s), got ${keys.length}`),
    );
  }
  const tail = [keys.length, ...keys, ...args];
  return connection
    .send('EVALSHA', [script.sha1, ...tail], timeoutMs)
    .then(script.parse, (error: unknown) => {
      if (!isNoScript(error)) throw error;
      return connection.send('EVAL', [script.lua, ...tail], timeoutMs).then(script.parse);
    });
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Parses an integer reply, rejecting anything else (a misbehaving proxy, say). */
export function integerReply(script: string) {
  return (reply: unknown): number => {
    if (typeof reply === 'number' && Number.isInteger(reply)) return reply;
    throw new Error(`unexpected reply from script ${script}: ${String(reply)}`);
  };
}
