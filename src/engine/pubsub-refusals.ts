import { CONNECT_WAIT_MS, type RedisConnection } from '../driver/connection.js';
import type { WarningCode } from './events.js';

/** A refusal that no retry changes: a server before Redis 7, an ACL user without the command. */
const REFUSED = /unknown command|NOPERM|no permissions/i;

/** Whether `error` is such a refusal. */
export function isRefusal(error: unknown): boolean {
  return REFUSED.test(messageOf(error));
}

/** What `error` says: its message, or itself as text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * What a locker learns of its right to use plain pub/sub (`PUBLISH`, `SUBSCRIBE`) on its
 * nodes, and says once per command: a refusal costs waiters their wake-ups, not their locks.
 */
export class PlainPubSubRefusals {
  readonly #prefix: string;
  readonly #warn: (code: WarningCode, message: string, node: number) => void;
  /** Whether the user's right to PUBLISH was asked (or is being asked). */
  #publishChecked = false;
  /** The commands refused so far: each is reported once. */
  readonly #reported = new Set<'PUBLISH' | 'SUBSCRIBE'>();

  constructor(prefix: string, warn: (code: WarningCode, message: string, node: number) => void) {
    this.#prefix = prefix;
    this.#warn = warn;
  }

  /**
   * A script's `PUBLISH` fails silently (it must not fail the release), so the first release
   * of a locker asks once, with an empty message to `channel` (its own, which wakes nobody),
   * whether the user may publish; a refusal is reported as a `PUBSUB_UNAVAILABLE` warning.
   */
  checkPublish(nodes: readonly RedisConnection[], channel: string): void {
    if (this.#publishChecked) return;
    this.#publishChecked = true;
    nodes.forEach((node, index) => {
      node.send('PUBLISH', [channel, ''], CONNECT_WAIT_MS).catch((error: unknown) => {
        if (isRefusal(error)) this.refused('PUBLISH', error, index);
        else this.#publishChecked = false; // not an answer (a node down): ask again next time
      });
    });
  }

  /**
   * `command` was refused on node `node`: waiters poll (the waiter side) or are not woken by
   * this locker's releases (the release side). Said once per command, naming the rule to add:
   * the channels (`&<prefix>*`) when the user may not use them, else the command.
   */
  refused(command: 'PUBLISH' | 'SUBSCRIBE', error: unknown, node: number): void {
    const reply = messageOf(error);
    if (!REFUSED.test(reply) || this.#reported.has(command)) return;
    this.#reported.add(command);
    const rule = /channel/i.test(reply) ? `&${this.#prefix}*` : `+${command.toLowerCase()}`;
    const effect =
      command === 'SUBSCRIBE'
        ? "this locker's waiters are not woken by releases: they poll every retryDelayMs"
        : "this locker's releases wake no waiter: waiters poll every retryDelayMs";
    this.#warn(
      'PUBSUB_UNAVAILABLE',
      `refused ${command} (${reply}): ${effect}; grant ${rule}`,
      node,
    );
  }
}
