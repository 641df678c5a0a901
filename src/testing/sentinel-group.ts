import { ask } from './ask.js';
import type { RedisServer } from './redis-server.js';
import { failoverProgress, healthProgress, reportedMaster } from './sentinel-checks.js';
import { shortenPeriods } from './sentinel-periods.js';
import { until } from './until.js';

/** The running group that `startRedisSentinel` hands out. */
export class LiveSentinelGroup {
  /** The arrays fill up while `startRedisSentinel` starts nodes, so that `stop()` sees all. */
  constructor(
    readonly masterName: string,
    readonly servers: readonly RedisServer[],
    readonly sentinels: readonly RedisServer[],
    private readonly waitMs: number,
  ) {}

  get sentinelAddresses(): { host: string; port: number }[] {
    return this.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  master(): Promise<RedisServer> {
    return reportedMaster(this);
  }

  async replicas(): Promise<RedisServer[]> {
    const master = await this.master();
    return this.servers.filter((server) => server !== master);
  }

  async failover(timeoutMs = this.waitMs): Promise<RedisServer> {
    await this.#shortenPeriods();
    const old = await this.master();
    const sentinel = this.sentinels.find((s) => s.running && !s.paused);
    if (!sentinel) throw new Error('no sentinel is running (unpaused) to start a failover');
    await ask(sentinel, ['SENTINEL', 'FAILOVER', this.masterName]).catch((error: unknown) => {
      const where = `sentinel ${sentinel.port}`;
      throw new Error(`SENTINEL FAILOVER ${this.masterName} on ${where}: ${error}`, {
        cause: error,
      });
    });
    return until(
      `the sentinels to fail ${this.masterName} over from ${old.port}`,
      () => failoverProgress(this, old),
      timeoutMs,
    );
  }

  async waitUntilHealthy(timeoutMs = this.waitMs): Promise<void> {
    await this.#shortenPeriods();
    await until(
      `Sentinel group ${this.masterName} to be healthy`,
      () => healthProgress(this),
      timeoutMs,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.servers].map((node) => node.stop()));
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /** Again on every call, for sentinels restarted since. */
  async #shortenPeriods(): Promise<void> {
    const reachable = this.sentinels.filter((s) => s.running && !s.paused);
    await Promise.all(reachable.map(shortenPeriods));
  }
}
