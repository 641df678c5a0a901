import type { Redis } from 'ioredis';

/** A held lock, as far as the benchmark is concerned. */
export interface Held {
  release(): Promise<unknown>;
}

/** One library, set up on a list of clients. */
export interface Contender {
  acquire(key: string, ttlMs: number): Promise<Held>;
  close(): Promise<void>;
}

/** Retry settings: each library's defaults, or tuned for a short critical section. */
export type Tuning = 'defaults' | 'tuned';

export interface ContenderSpec {
  readonly name: string;
  /** Whether it can run on several nodes (Redlock); single-node-only contenders skip those. */
  readonly multiNode: boolean;
  readonly singleNode: boolean;
  /** Only meaningful under contention (fair mode changes nothing without waiters). */
  readonly contentionOnly?: boolean;
  /** Only measured uncontended (the cost of telemetry per cycle). */
  readonly uncontendedOnly?: boolean;
  make(clients: Redis[], tuning: Tuning): Contender;
}
