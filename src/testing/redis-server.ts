import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { namesOf, rejectUnknownOptions } from '../config/option-names.js';
import { track, trackPid, untrack } from './cleanup.js';
import { DIR_PREFIX, reapLeftoverServers } from './leftovers.js';
import { freePort } from './ports.js';

/** Options of {@link RedisServer.start}. */
export interface RedisServerOptions {
  /** The server binary. @default $DISTLOCK_REDIS_SERVER when set, else `redis-server` from PATH */
  binary?: string;
  /** Extra `redis-server` arguments, e.g. `['--maxmemory', '10mb']`. */
  args?: readonly string[];
  /** How long to wait until the node accepts connections. @default 10000 */
  startTimeoutMs?: number;
  /**
   * Text of a config file, written once into the node's temp dir and passed as the first
   * argument. The file stays across `restart()`, so what the node rewrote into it (as Sentinel
   * does with its state) survives. Sentinel needs one: start it with `args: ['--sentinel']`.
   */
  config?: string;
}

/** The names of {@link RedisServerOptions}. */
export const REDIS_SERVER_OPTIONS = namesOf<RedisServerOptions>({
  binary: true,
  args: true,
  startTimeoutMs: true,
  config: true,
});

/** The server binary, and where its name came from (for the message when it cannot run). */
interface Binary {
  readonly path: string;
  readonly from: 'The `binary` option' | 'DISTLOCK_REDIS_SERVER' | 'the default';
}

type Settings = Required<Omit<RedisServerOptions, 'config' | 'binary'>> & { binary: Binary };

/** Leftovers of dead processes are reaped once, at this process's first start. */
let reaped = false;

/** What a node prints once it listens: a data node, or (with `--sentinel`) a Sentinel. */
const READY = /Ready to accept connections|Sentinel ID is/;

const INSTALL_HINT =
  'Install it (Debian/Ubuntu: `apt-get install -y redis-server`; macOS: `brew install redis`) ' +
  'or point DISTLOCK_REDIS_SERVER at the binary.';

/** Which binary to start: the option, else `$DISTLOCK_REDIS_SERVER`, else `redis-server`. */
function serverBinary(option: string | undefined): Binary {
  if (option !== undefined) return { path: option, from: 'The `binary` option' };
  const variable = process.env.DISTLOCK_REDIS_SERVER;
  if (variable) return { path: variable, from: 'DISTLOCK_REDIS_SERVER' };
  return { path: 'redis-server', from: 'the default' };
}

/** Why `binary` could not be started (`ENOENT`, `EACCES`...), naming where it came from. */
function cannotStart(binary: Binary, error: NodeJS.ErrnoException): string {
  let problem = `could not be started (${error.message})`;
  if (error.code === 'EACCES') problem = 'is not executable';
  if (error.code === 'ENOENT') {
    problem = binary.path.includes('/') ? 'does not exist' : 'was not found on PATH';
  }
  if (binary.from === 'the default') return `redis-server ${problem}. ${INSTALL_HINT}`;
  const unset = binary.from === 'DISTLOCK_REDIS_SERVER' ? ', or unset it to use PATH' : '';
  return `${binary.from} is "${binary.path}", which ${problem}. Point it at a redis-server binary${unset}.`;
}

/**
 * One real `redis-server` process on a free loopback port, in its own temp dir, without
 * persistence (`--save "" --appendonly no`). Faults are real signals to its pid.
 */
export class RedisServer {
  readonly port: number;
  readonly #options: Settings;
  readonly #owned: ReturnType<typeof track>;
  readonly #configFile: string | undefined;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #paused = false;

  private constructor(port: number, options: Settings, dir: string, config?: string) {
    this.port = port;
    this.#options = options;
    this.#owned = track(dir);
    if (config !== undefined) {
      this.#configFile = join(dir, 'redis.conf');
      writeFileSync(this.#configFile, config);
    }
  }

  /** Starts a server on a free port (retrying with another port if one is taken meanwhile). */
  static async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    rejectUnknownOptions(options, REDIS_SERVER_OPTIONS, 'RedisServer.start');
    const settings: Settings = {
      binary: serverBinary(options.binary),
      args: options.args ?? [],
      startTimeoutMs: options.startTimeoutMs ?? 10_000,
    };
    if (!reaped) {
      reaped = true;
      reapLeftoverServers();
    }
    for (let tries = 1; ; tries++) {
      const dir = mkdtempSync(join(tmpdir(), DIR_PREFIX));
      const server = new RedisServer(await freePort(), settings, dir, options.config);
      try {
        await server.#spawn();
        return server;
      } catch (error) {
        await server.stop();
        const portTaken = error instanceof Error && /in use/i.test(error.message);
        if (!portTaken || tries >= 5) throw error;
      }
    }
  }

  /** The node's private temp dir (its working directory). */
  get dir(): string {
    return this.#owned.dir;
  }

  /** `redis://127.0.0.1:<port>` */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** The process id, or `undefined` while the server is down. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Whether the process is alive (paused counts as alive). */
  get running(): boolean {
    return this.#child !== undefined;
  }

  /** Whether the process is stopped with SIGSTOP. */
  get paused(): boolean {
    return this.#paused;
  }

  /** SIGKILL: the node vanishes at once, with everything in memory. */
  async kill(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    child.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGSTOP: the node keeps its connections open but answers nothing. */
  pause(): void {
    this.#signal('SIGSTOP');
    this.#paused = true;
  }

  /** SIGCONT: a paused node goes on, answering what queued up meanwhile. */
  resume(): void {
    this.#signal('SIGCONT');
    this.#paused = false;
  }

  /** Kills the node (if running) and starts it again on the same port with empty memory. */
  async restart(): Promise<void> {
    await this.kill();
    await this.#spawn();
  }

  /** Kills the process and removes its temp dir. Safe to call more than once. */
  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.#owned.dir, { recursive: true, force: true });
    untrack(this.#owned);
  }

  #signal(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined) throw new Error(`redis-server on port ${this.port} is not running`);
    process.kill(pid, signal);
  }

  #spawn(): Promise<void> {
    const args = [
      ...(this.#configFile === undefined ? [] : [this.#configFile]),
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.#owned.dir,
      ...this.#options.args,
    ];
    const { binary } = this.#options;
    const child = spawn(binary.path, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.#child = child;
    this.#paused = false;
    this.#exited = new Promise((resolve) => {
      child.once('close', () => {
        if (this.#child === child) this.#child = undefined;
        resolve();
      });
    });
    if (child.pid !== undefined) trackPid(this.#owned, child.pid);
    return new Promise((resolve, reject) => {
      let output = '';
      const fail = (message: string) => {
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new Error(message));
      };
      const timer = setTimeout(
        () => fail(`redis-server on port ${this.port} was not ready in time:\n${output}`),
        this.#options.startTimeoutMs,
      );
      child.once('error', (error: NodeJS.ErrnoException) => {
        fail(cannotStart(binary, error));
      });
      child.once('exit', () => fail(`redis-server on port ${this.port} exited:\n${output}`));
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (READY.test(output)) {
          clearTimeout(timer);
          child.removeAllListeners('exit');
          child.stdout?.off('data', onData);
          child.stderr?.off('data', onErrorData);
          child.stdout?.resume();
          child.stderr?.resume();
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      const onErrorData = (chunk: Buffer) => {
        output += chunk.toString();
      };
      child.stderr?.on('data', onErrorData);
    });
  }
}
