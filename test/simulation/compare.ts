/**
 * What the differential test compares: replies, exactly (kind, bytes, integer values, the
 * words of a Lua runtime error); and whole keyspaces, read the same way from
 * both sides: every key, its type, its value and its absolute expiry in ms (exact, since
 * both sides read the same clock).
 */
import type { Reply } from '../../src/testing/in-memory/reply.js';

/** Whether two replies are the same: same kinds, same bytes, same integers. */
export function sameReply(real: Reply, simulated: Reply): boolean {
  return show(real) === show(simulated);
}

/** A reply as readable text (integers exact). */
export function show(reply: Reply): string {
  return JSON.stringify(reply, (_, value) => (typeof value === 'bigint' ? `${value}n` : value));
}

/** Reads a keyspace through its commands: `call` is the real server's or the node's. */
export async function dumpKeyspace(
  call: (argv: string[]) => Promise<Reply> | Reply,
): Promise<string> {
  const keys = await call(['KEYS', '*']);
  if (keys.kind !== 'array') throw new Error(`KEYS answered ${show(keys)}`);
  const names = keys.value.map((k) => (k.kind === 'bulk' ? k.value : '?')).sort();
  const entries: string[] = [];
  for (const key of names) {
    const type = await call(['TYPE', key]);
    const kind = type.kind === 'status' ? type.value : show(type);
    let value: Reply;
    if (kind === 'string') value = await call(['GET', key]);
    else if (kind === 'zset') value = await call(['ZRANGE', key, '0', '-1', 'WITHSCORES']);
    else if (kind === 'hash') value = sortedPairs(await call(['HGETALL', key]));
    else value = type;
    const expiry = await call(['PEXPIRETIME', key]);
    entries.push(`${JSON.stringify(key)} ${kind} ${show(value)} expires ${show(expiry)}`);
  }
  return entries.join('\n');
}

/** A hash's fields in byte order (HGETALL's order is the hash's encoding's, not modelled). */
function sortedPairs(reply: Reply): Reply {
  if (reply.kind !== 'array') return reply;
  const pairs: [Reply, Reply][] = [];
  for (let i = 0; i < reply.value.length; i += 2) {
    pairs.push([reply.value[i] as Reply, reply.value[i + 1] as Reply]);
  }
  pairs.sort(([a], [b]) => (show(a) < show(b) ? -1 : 1));
  return { kind: 'array', value: pairs.flat() };
}
