import { connect, createServer, type Server, type Socket } from 'node:net';

/** What the proxy does to the traffic of every connection through it. */
export type Fault =
  /** Forward everything at once. */
  | { readonly mode: 'pass' }
  /** Hold every reply (server to client) back by `delayMs`; requests pass at once. */
  | { readonly mode: 'delay'; readonly delayMs: number }
  /**
   * Forward nothing, either way, while the connections stay open (a partition). What is held
   * flows, in order, once the mode changes: like TCP retransmission after the network heals,
   * and without desynchronising the Redis protocol stream.
   */
  | { readonly mode: 'blackhole' }
  /**
   * Hold the traffic of one direction only, as a black hole does: `requests` (client to
   * server) or `replies` (server to client). Held replies to a client that is gone are lost.
   */
  | { readonly mode: 'hold'; readonly direction: 'requests' | 'replies' }
  /** Reset (RST) every open connection, and every new one as soon as it is accepted. */
  | { readonly mode: 'reset' };

/** One direction of one proxied connection, keeping chunk order across fault changes. */
class Pipe {
  #held: Buffer[] = [];
  #lastDueAt = 0;

  constructor(
    private readonly to: Socket,
    readonly isReply: boolean,
  ) {}

  get heldBytes(): number {
    let bytes = 0;
    for (const chunk of this.#held) bytes += chunk.length;
    return bytes;
  }

  push(chunk: Buffer, fault: Fault): void {
    if (this.#holds(fault) || this.#held.length > 0) {
      this.#held.push(chunk);
      return;
    }
    this.#forward(chunk, fault);
  }

  /** Sends what a black hole held, once the fault no longer holds traffic. */
  flush(fault: Fault): void {
    if (this.#holds(fault)) return;
    const held = this.#held;
    this.#held = [];
    for (const chunk of held) this.#forward(chunk, fault);
  }

  #holds(fault: Fault): boolean {
    if (fault.mode === 'blackhole') return true;
    if (fault.mode !== 'hold') return false;
    return (fault.direction === 'replies') === this.isReply;
  }

  #forward(chunk: Buffer, fault: Fault): void {
    const delayMs = fault.mode === 'delay' && this.isReply ? fault.delayMs : 0;
    const dueAt = Math.max(this.#lastDueAt, Date.now() + delayMs);
    this.#lastDueAt = dueAt;
    if (dueAt <= Date.now()) {
      if (!this.to.destroyed) this.to.write(chunk);
      return;
    }
    setTimeout(() => {
      if (!this.to.destroyed) this.to.write(chunk);
    }, dueAt - Date.now()).unref();
  }
}

/**
 * Resets (RST) a socket. One that is no longer open both ways (its peer closed it, as Redis
 * does after QUIT or when it stops) is only closed: `resetAndDestroy` on it leaves libuv
 * spinning at full CPU, and the process never exits. So is one still connecting, which has
 * nothing to reset.
 */
function reset(socket: Socket): void {
  if (socket.connecting || socket.readyState !== 'open') socket.destroy();
  else socket.resetAndDestroy();
}

interface Proxied {
  readonly client: Socket;
  readonly upstream: Socket;
  readonly pipes: readonly Pipe[];
  /** The client side was reset by {@link FaultProxy.orphan}; the server side lives on. */
  orphaned: boolean;
}

/**
 * A TCP proxy in front of one Redis node that injects network faults per connection:
 * delayed replies, a black hole, or connection resets. Point the locker at `url`.
 *
 * @example
 * ```ts
 * const proxy = await FaultProxy.start(redis.nodes[0].port);
 * proxy.set({ mode: 'delay', delayMs: 500 });
 * ```
 */
export class FaultProxy {
  readonly port: number;
  readonly #server: Server;
  readonly #connections = new Set<Proxied>();
  /** Connections whose client side {@link FaultProxy.orphan} reset. */
  readonly #orphans = new Set<Proxied>();
  #fault: Fault = { mode: 'pass' };
  #targetPort: number;

  private constructor(server: Server, port: number, targetPort: number) {
    this.#server = server;
    this.port = port;
    this.#targetPort = targetPort;
  }

  /** Listens on a free loopback port and forwards to `targetPort` on 127.0.0.1. */
  static start(targetPort: number): Promise<FaultProxy> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        if (typeof address !== 'object' || address === null) {
          reject(new Error('could not read the proxy port'));
          return;
        }
        const proxy = new FaultProxy(server, address.port, targetPort);
        server.on('connection', (client) => proxy.#accept(client));
        resolve(proxy);
      });
    });
  }

  /** `redis://127.0.0.1:<proxy port>` */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** The port on 127.0.0.1 that new connections are forwarded to. */
  get targetPort(): number {
    return this.#targetPort;
  }

  /**
   * Points the proxy at another server, as a DNS change, a load balancer or a config reload
   * re-points a name: new connections go to `targetPort` on 127.0.0.1, and every open one is
   * reset, so that its client reconnects, now to the other server, under the same address.
   *
   * @example
   * ```ts
   * const proxy = await FaultProxy.start(redis.nodes[2].port);
   * proxy.retarget(redis.nodes[0].port); // the proxy's URL now reaches node 0
   * ```
   */
  retarget(targetPort: number): void {
    this.#targetPort = targetPort;
    for (const connection of [...this.#connections]) this.#reset(connection);
  }

  /** The fault in force. */
  get fault(): Fault {
    return this.#fault;
  }

  /** Changes the fault for every open and future connection. */
  set(fault: Fault): void {
    this.#fault = fault;
    for (const connection of this.#connections) {
      if (fault.mode === 'reset') this.#reset(connection);
      else for (const pipe of connection.pipes) pipe.flush(fault);
    }
  }

  /**
   * Resets the client side of every open connection while its server side stays open, as a
   * proxy or a load balancer does when the client goes away: the client reconnects, while
   * the requests this proxy holds for the old connections wait for `deliver()`, which sends
   * them to the server in order (after whatever the client sent since on its new
   * connection) and then closes them. Replies to them are dropped. Orphans no longer follow
   * {@link FaultProxy.set}.
   */
  orphan(): { deliver(): void } {
    const orphans = [...this.#connections];
    for (const connection of orphans) {
      this.#connections.delete(connection);
      this.#orphans.add(connection);
      connection.orphaned = true;
      if (!connection.client.destroyed) reset(connection.client);
    }
    return {
      deliver: () => {
        for (const { pipes, upstream } of orphans) {
          for (const pipe of pipes) pipe.flush({ mode: 'pass' });
          upstream.end();
        }
      },
    };
  }

  /** Bytes this proxy holds back now, per direction, over every connection. */
  get held(): { readonly requests: number; readonly replies: number } {
    let requests = 0;
    let replies = 0;
    for (const { pipes } of this.#connections) {
      for (const pipe of pipes) {
        if (pipe.isReply) replies += pipe.heldBytes;
        else requests += pipe.heldBytes;
      }
    }
    return { requests, replies };
  }

  /** Closes the listener and every proxied connection. */
  close(): Promise<void> {
    for (const connection of [...this.#connections, ...this.#orphans]) this.#reset(connection);
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    const upstream = connect(this.#targetPort, '127.0.0.1');
    // As Redis and its clients do: Nagle's algorithm would hold a reply that follows another
    // one not yet acknowledged for up to 40 ms, a delay no real deployment has.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    const toClient = new Pipe(client, true);
    const toServer = new Pipe(upstream, false);
    const connection: Proxied = {
      client,
      upstream,
      pipes: [toClient, toServer],
      orphaned: false,
    };
    this.#connections.add(connection);
    if (this.#fault.mode === 'reset') {
      this.#reset(connection);
      return;
    }
    client.on('data', (chunk: Buffer) => toServer.push(chunk, this.#fault));
    upstream.on('data', (chunk: Buffer) => toClient.push(chunk, this.#fault));
    const end = () => this.#reset(connection);
    const clientGone = () => {
      if (!connection.orphaned) end();
    };
    client.on('error', clientGone);
    client.on('close', clientGone);
    upstream.on('error', end);
    upstream.on('close', end);
  }

  #reset(connection: Proxied): void {
    this.#connections.delete(connection);
    this.#orphans.delete(connection);
    for (const socket of [connection.client, connection.upstream]) {
      if (socket.destroyed) continue;
      reset(socket);
    }
  }
}
