import { defineScript, integerReply } from './script.js';

/**
 * record-lease — raises a node's record of the longest lease lockers may be granted there
 * (see `engine/lease-records.ts`), and says which server keeps it now. The value is
 * `<ttlMs> <server>`, a string, so that reading it needs only GET.
 *
 * KEYS[1]  the record (`<prefix>longest-lease`)
 * ARGV[1]  the lease, in ms, that the caller may ask for from now on
 * ARGV[2]  the server that answers on this node now (its run_ids, as the caller read them)
 *
 * Returns the longest lease on record now, in ms.
 */
export const recordLeaseScript = defineScript({
  name: 'record-lease',
  keys: ({ key }: { key: string; ttlMs: number; server: string }) => [key],
  args: ({ ttlMs, server }) => [ttlMs, server],
  parse: integerReply('record-lease'),
  lua: `local record, server = KEYS[1], ARGV[2]

-- A whole number of ms from 0 to 2^31 - 1 (the longest TTL distlock takes: a timer's limit),
-- whatever was given or stored, so that string.format gets an integer.
local function wholeMs(value)
  local ms = tonumber(value) or 0
  if ms ~= ms or ms < 0 then
    return 0
  end
  return math.floor(math.min(ms, 2147483647))
end

local stored = redis.call('GET', record)
local longest = wholeMs(stored and string.match(stored, '^%d+'))
local ttlMs = wholeMs(ARGV[1])
if ttlMs > longest then
  longest = ttlMs
end
redis.call('SET', record, string.format('%d %s', longest, server))
return longest
`,
});

/** A record as GET returns it: the longest lease, and the server that wrote it last. */
export interface LeaseRecord {
  readonly ttlMs: number;
  readonly server: string;
}

/** Reads a record's value; none (or a value it cannot read) is no record. */
export function parseLeaseRecord(value: unknown): LeaseRecord | undefined {
  const text = typeof value === 'string' ? value : Buffer.isBuffer(value) ? String(value) : '';
  const match = /^(\d+) (.*)$/s.exec(text);
  if (!match) return undefined;
  return { ttlMs: Number(match[1]), server: match[2] ?? '' };
}
