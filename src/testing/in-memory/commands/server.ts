/** Server commands: TIME, PING, INFO, FLUSHALL, PUBLISH; WAIT is named but not modelled. */
import { bulk, bulks, integer, notModelled, OK, ReplyError, SYNTAX, status } from '../reply.js';
import { type Command, type CommandContext, is } from './command.js';

/** What INFO reports of a node, and how PUBLISH reaches its subscribers. */
export interface ServerContext extends CommandContext {
  readonly runId: string;
  /** When the node (re)started, in µs of its clock. */
  readonly startedUs: bigint;
  readonly port: number;
  readonly maxmemory: number;
  readonly maxmemoryPolicy: string;
  /** Delivers a message: how many subscribers it reached. */
  publish(channel: string, message: string): number;
}

const time: Command<ServerContext> = {
  name: 'time',
  arity: 1,
  run({ nowUs }) {
    const now = nowUs();
    return bulks([String(now / 1_000_000n), String(now % 1_000_000n)]);
  },
};

const ping: Command<ServerContext> = {
  name: 'ping',
  arity: -1,
  run(_, args) {
    if (args.length > 1) throw new ReplyError(`ERR wrong number of arguments for 'ping' command`);
    return args[0] === undefined ? status('PONG') : bulk(args[0]);
  },
};

/**
 * The INFO sections modelled: those distlock reads (run_id, uptime, server_time_usec, maxmemory,
 * policy) and a few more.
 */
function infoSections(context: ServerContext): Record<string, [string, string | number][]> {
  // As Redis counts it: its clock's whole seconds less its start's, so a server up 0.1 s says
  // 1 when a second ticked over meanwhile.
  const uptime = wholeSeconds(context.nowUs()) - wholeSeconds(context.startedUs);
  return {
    Server: [
      ['redis_version', '7.0.15'],
      ['redis_mode', 'standalone'],
      ['run_id', context.runId],
      ['tcp_port', context.port],
      ['server_time_usec', String(context.nowUs())],
      ['uptime_in_seconds', String(uptime)],
      ['uptime_in_days', String(uptime / 86_400n)],
    ],
    Memory: [
      ['maxmemory', context.maxmemory],
      ['maxmemory_policy', context.maxmemoryPolicy],
    ],
    Replication: [
      ['role', 'master'],
      ['connected_slaves', 0],
    ],
  };
}

const info: Command<ServerContext> = {
  name: 'info',
  arity: -1,
  run(context, args) {
    const wanted = args.map((arg) => arg.toLowerCase());
    const all =
      wanted.length === 0 || wanted.some((w) => ['all', 'default', 'everything'].includes(w));
    const text = Object.entries(infoSections(context))
      .filter(([name]) => all || wanted.includes(name.toLowerCase()))
      .map(([name, fields]) => `# ${name}\r\n${fields.map(([f, v]) => `${f}:${v}\r\n`).join('')}`)
      .join('\r\n');
    return bulk(text);
  },
};

const flushall: Command<ServerContext> = {
  name: 'flushall',
  arity: -1,
  run({ keyspace }, args) {
    if (args.length > 1 || (args.length === 1 && !is(args[0], 'sync') && !is(args[0], 'async'))) {
      throw new ReplyError(SYNTAX);
    }
    keyspace.clear();
    return OK;
  },
};

const publish: Command<ServerContext> = {
  name: 'publish',
  arity: 3,
  run: (context, [channel, message]) =>
    integer(context.publish(channel as string, message as string)),
};

const wait: Command<ServerContext> = {
  name: 'wait',
  arity: 3,
  noScript: true,
  run: () => notModelled('WAIT (replicas)'),
};

export const SERVER_COMMANDS: readonly Command<ServerContext>[] = [
  time,
  ping,
  info,
  flushall,
  publish,
  wait,
];

/** Whole seconds of a time in µs, rounded down (also before the epoch). */
function wholeSeconds(us: bigint): bigint {
  return (us >= 0n ? us : us - 999_999n) / 1_000_000n;
}
