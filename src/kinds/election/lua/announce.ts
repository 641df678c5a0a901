import { defineScript, integerReply } from '../../../lua/script.js';

/**
 * announce — tell an election's observers that its leader changed (a leader resigned or gave
 * up), so that they read it again at once.
 *
 * KEYS[1]  the leader hash: touched by nothing here, named so that a Redis Cluster runs the
 *          script on the election's shard
 * ARGV[1]  channel
 *
 * Returns the number of subscribers that got the message.
 */
export const announceScript = defineScript({
  name: 'announce',
  keys: ({ leaderKey }: { leaderKey: string; channel: string }) => [leaderKey],
  args: ({ channel }) => [channel],
  parse: integerReply('announce'),
  lua: `
local channel = ARGV[1]
return redis.call('PUBLISH', channel, '')
`,
});
