import { NotSentError } from '../driver/connection.js';
import { InvalidArgumentError } from '../errors.js';
import { fanOut } from '../quorum/fan-out.js';
import type { LockContext } from './context.js';

/**
 * Which server each node is, by its `run_id` (INFO server), so that two URLs or clients that
 * reach one server (`127.1` and `LOCALHOST`, a second client...) cannot count twice towards a
 * majority. Checked before the first acquisition, and again before a later one for any node
 * that could not be asked yet (down, or not answering), until every node has answered.
 */
export class NodeIdentities {
  /** Per node: its run_id; `null` when the server will not say (INFO renamed or denied). */
  readonly #ids: (string | null | undefined)[];
  #unknown: number;
  #checking: Promise<void> | undefined;
  #duplicate: InvalidArgumentError | undefined;

  constructor(nodeCount: number) {
    this.#ids = new Array(nodeCount).fill(undefined);
    this.#unknown = nodeCount > 1 ? nodeCount : 0; // one node cannot count twice
  }

  /**
   * Resolves once the nodes that answer are known to be distinct servers; rejects with an
   * `InvalidArgumentError` naming the duplicate (and so does every later call). Returns
   * `undefined`, so that the caller need not even await, once every node is known.
   */
  check(context: LockContext, timeoutMs: number): Promise<void> | undefined {
    if (this.#duplicate) return Promise.reject(this.#duplicate);
    if (this.#unknown === 0) return undefined;
    this.#checking ??= this.#ask(context, timeoutMs).finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #ask(context: LockContext, timeoutMs: number): Promise<void> {
    const ids = this.#ids;
    await fanOut(context.nodes, {
      timeoutMs,
      clock: context.clock,
      run: async (node, index) => {
        if (ids[index] !== undefined) return;
        try {
          ids[index] = runId(await node.send('INFO', ['server'], timeoutMs));
        } catch (error) {
          // Not sent: ask again next time. A refusal (INFO renamed or denied) is final.
          if (!(error instanceof NotSentError)) ids[index] = null;
        }
      },
      judge: () => ({ vote: 'yes' }),
      onTimeout: (node) => node.markStalled(),
    }).settled;
    this.#unknown = ids.filter((id) => id === undefined).length;
    this.#duplicate = duplicateIn(ids, context);
    if (this.#duplicate) throw this.#duplicate;
  }
}

function duplicateIn(
  ids: readonly (string | null | undefined)[],
  context: LockContext,
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

/** The run_id of an `INFO server` reply; `null` when it has none. */
function runId(reply: unknown): string | null {
  return /run_id:([0-9a-f]+)/.exec(String(reply))?.[1] ?? null;
}
