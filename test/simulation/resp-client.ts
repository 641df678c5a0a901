/**
 * A minimal RESP2 client for the differential test: it keeps what a client library hides
 * (a status apart from a bulk string, an exact integer, bytes as bytes), so that the real
 * server's replies compare with the simulated node's `Reply` as they are.
 */
import { connect, type Socket } from 'node:net';
import type { Reply } from '../../src/testing/in-memory/reply.js';

export interface RespClient {
  /** Sends one command (byte strings) and resolves with its reply. */
  call(argv: readonly string[]): Promise<Reply>;
  /** Messages received by a subscribed client: [channel, message] (byte strings). */
  readonly messages: [string, string][];
  close(): void;
}

function encode(argv: readonly string[]): Buffer {
  const parts = argv.map((arg) => `$${arg.length}\r\n${arg}\r\n`);
  return Buffer.from(`*${argv.length}\r\n${parts.join('')}`, 'latin1');
}

/** Parses one reply at `offset` of `data`: undefined when it is not complete yet. */
function parse(data: string, offset: number): [Reply, number] | undefined {
  const end = data.indexOf('\r\n', offset);
  if (end === -1) return undefined;
  const type = data[offset];
  const line = data.slice(offset + 1, end);
  const next = end + 2;
  if (type === '+') return [{ kind: 'status', value: line }, next];
  if (type === '-') return [{ kind: 'error', value: line }, next];
  if (type === ':') return [{ kind: 'integer', value: BigInt(line) }, next];
  const length = Number(line);
  if (type === '$') {
    if (length < 0) return [{ kind: 'nil' }, next];
    if (data.length < next + length + 2) return undefined;
    return [{ kind: 'bulk', value: data.slice(next, next + length) }, next + length + 2];
  }
  if (type === '*') {
    if (length < 0) throw new Error('nil array: not expected from the commands compared');
    const items: Reply[] = [];
    let at = next;
    for (let i = 0; i < length; i++) {
      const parsed = parse(data, at);
      if (!parsed) return undefined;
      items.push(parsed[0]);
      at = parsed[1];
    }
    return [{ kind: 'array', value: items }, at];
  }
  throw new Error(`unexpected RESP type ${JSON.stringify(type)}`);
}

/** A message pushed to a subscriber (`message`, channel, payload), as [channel, payload]. */
function pushedMessage(reply: Reply): [string, string] | undefined {
  if (reply.kind !== 'array') return undefined;
  const [kind, channel, payload] = reply.value.map((part) =>
    part.kind === 'bulk' ? part.value : undefined,
  );
  if (kind !== 'message' || channel === undefined || payload === undefined) return undefined;
  return [channel, payload];
}

/** Connects to a server on the loopback at `port`. */
export async function connectResp(port: number): Promise<RespClient> {
  const socket: Socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.setNoDelay(true);
  const waiting: ((reply: Reply) => void)[] = [];
  const messages: [string, string][] = [];
  let data = '';
  socket.on('data', (chunk: Buffer) => {
    data += chunk.toString('latin1');
    for (let parsed = parse(data, 0); parsed; parsed = parse(data, 0)) {
      data = data.slice(parsed[1]);
      const [reply] = parsed;
      const message = waiting.length === 0 ? pushedMessage(reply) : undefined;
      if (message) messages.push(message);
      else waiting.shift()?.(reply);
    }
  });
  return {
    call: (argv) =>
      new Promise((resolve) => {
        waiting.push(resolve);
        socket.write(encode(argv));
      }),
    messages,
    close: () => socket.destroy(),
  };
}
