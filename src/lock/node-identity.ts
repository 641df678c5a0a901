import { InvalidArgumentError } from '../errors.js';
import { askEveryNode, type NodeSet } from './every-node.js';

/**
 * The locker's check of a server's settings (such as eviction) by its `INFO`, before it takes
 * part in a lock: an error refuses it. `info` is undefined when the server will not say (INFO
 * renamed or denied).
 */
export type ServerInspection = (index: number, info: string | undefined) => Error | undefined;

/**
 * Which server each node is, by its `run_id` (INFO), so that two URLs or clients that reach
 * one server (`127.1` and `LOCALHOST`, a second client...) cannot count twice towards a
 * majority; and whether `inspect` accepts its settings. Asked before every acquisition
 * attempt until every node has answered; in Redlock, a node that has not answered yet gets
 * no acquisition request (its vote could be a duplicate's). Asking never waits for a
 * connection that is not ready, so a down node costs nothing.
 */
export class NodeIdentities {
  /** Per node: its run_id; `null` when the server will not say (INFO renamed or denied). */
  readonly #ids: (string | null | undefined)[];
  /** Per node: why it could not be asked last time (its connection's real cause). */
  readonly #failures: (Error | undefined)[];
  #unknown: number;
  #checking: Promise<void> | undefined;
  /** Why no lock may be granted: a server listed twice, or one `inspect` refused. */
  #refusal: Error | undefined;
  readonly #inspect: ServerInspection;
  /** Whether a node's votes may count before it answered: one node cannot count twice. */
  readonly #trustedAtOnce: boolean;

  /**
   * `mustInspect`: no node votes before `inspect` saw its INFO, even a single one (for checks
   * that refuse a node, which nothing may bypass).
   */
  constructor(nodeCount: number, inspect: ServerInspection = () => undefined, mustInspect = false) {
    this.#ids = new Array(nodeCount).fill(undefined);
    this.#failures = new Array(nodeCount).fill(undefined);
    this.#unknown = nodeCount;
    this.#inspect = inspect;
    this.#trustedAtOnce = nodeCount === 1 && !mustInspect;
  }

  /** Whether node `index` said which server it is (or will not say): its votes may count. */
  known(index: number): boolean {
    return this.#trustedAtOnce || this.#unknown === 0 || this.#ids[index] !== undefined;
  }

  /** Why node `index` could not be asked yet, when it is not {@link NodeIdentities.known}. */
  failure(index: number): Error | undefined {
    return this.#failures[index];
  }

  /**
   * Resolves once the nodes that answer are known to be distinct servers that `inspect`
   * accepts; rejects with an `InvalidArgumentError` naming a duplicate, or with the error
   * `inspect` returned (and so does every later call). Returns
   * `undefined`, so that the caller need not even await, once every node is known.
   */
  check(context: NodeSet, ttlMs: number): Promise<void> | undefined {
    if (this.#refusal) return Promise.reject(this.#refusal);
    if (this.#unknown === 0) return undefined;
    this.#checking ??= this.#ask(context, ttlMs).finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #ask(context: NodeSet, ttlMs: number): Promise<void> {
    const ids = this.#ids;
    const asking = askEveryNode(
      context,
      ttlMs,
      async (node, _timeoutMs, index) => {
        if (ids[index] !== undefined) return;
        try {
          // A readiness wait of 0: a connection that is not up is asked again next time.
          const info = String(await node.send('INFO', [], 0));
          ids[index] = runId(info);
          this.#refusal ??= this.#inspect(index, info);
        } catch (error) {
          this.#failures[index] = error instanceof Error ? error : undefined;
          // Only the server's own refusal (INFO renamed or denied) is final; a connection
          // error, or nothing sent, is asked again next time.
          if (isInfoRefused(error)) {
            ids[index] = null;
            this.#refusal ??= this.#inspect(index, undefined);
          }
        }
      },
      () => ({ vote: 'yes' }),
    );
    await asking.settled;
    this.#unknown = ids.filter((id) => id === undefined).length;
    this.#refusal ??= duplicateIn(ids, context);
    if (this.#refusal) throw this.#refusal;
  }
}

function duplicateIn(
  ids: readonly (string | null | undefined)[],
  context: NodeSet,
): InvalidArgumentError | undefined {
  const first = new Map<string, number>();
  for (const [index, id] of ids.entries()) {
    if (typeof id !== 'string') continue;
    const earlier = first.get(id);
    if (earlier === undefined) {
      first.set(id, index);
      continue;
    }
    return new InvalidArgumentError(
      `nodes[${index}]`,
      `a different Redis server from nodes[${earlier}] (both answer with run_id ${id}; one server counted twice would inflate the quorum)`,
      context.nodes[index]?.name,
    );
  }
  return undefined;
}

/**
 * The server refuses INFO itself: denied to the user (NOPERM) or renamed away (unknown
 * command). Anything else (NOAUTH, LOADING, a connection failure) is asked again next time.
 */
function isInfoRefused(error: unknown): boolean {
  return error instanceof Error && /^(NOPERM|ERR unknown command)/.test(error.message);
}

/** The run_id of an `INFO` reply; `null` when it has none. */
function runId(info: string): string | null {
  return /run_id:([0-9a-f]+)/.exec(info)?.[1] ?? null;
}
