import { describe, expect, it } from 'vitest';
import { findDuplicates } from '../../src/engine/duplicate-servers.js';
import { type Identity, newIdentity } from '../../src/engine/identity-state.js';
import { InvalidArgumentError } from '../../src/errors.js';

/** A node that answered as the servers `runIds`, once another server than at first if `changed`. */
function answered(runIds: string[], changed = false): Identity {
  return { ...newIdentity(), runIds, changed, unchecked: true };
}

const names = ['127.0.0.1:6379', 'localhost:6379', '127.0.0.1:6380'];
const nameOf = (index: number) => names[index];

describe('findDuplicates', () => {
  it("finds nothing among distinct servers, and ends every node's wait for the comparison", () => {
    const ids = [
      answered(['a']),
      answered(['b']),
      { ...newIdentity(), runIds: null, unchecked: true },
    ];
    expect(findDuplicates(ids, nameOf)).toEqual({ refusal: undefined, warnings: [] });
    expect(ids.map((id) => [id.unchecked, id.duplicateOf])).toEqual([
      [false, undefined],
      [false, undefined],
      [false, undefined],
    ]);
  });

  it('refuses one server listed twice as first seen, naming the second node', () => {
    const { refusal, warnings } = findDuplicates([answered(['a']), answered(['a'])], nameOf);
    expect(refusal).toBeInstanceOf(InvalidArgumentError);
    expect(refusal?.message).toContain('nodes[1]');
    expect(refusal?.message).toContain('from nodes[0] (both answer with run_id a;');
    expect(warnings).toEqual([]);
  });

  it('keeps a node that changed into another listed server out, with one warning when it begins', () => {
    // The node that changed abstains, whatever its place in the list.
    const ids = [answered(['b'], true), answered(['a']), answered(['b'])];
    const first = findDuplicates(ids, nameOf);
    expect(first.refusal).toBeUndefined();
    expect(first.warnings).toEqual([
      {
        index: 0,
        message:
          'it now reaches the same server as nodes[2] (127.0.0.1:6380): it does not vote while one server would count twice',
      },
    ]);
    expect(ids.map((id) => id.duplicateOf)).toEqual([2, undefined, undefined]);
    expect(findDuplicates(ids, nameOf).warnings).toEqual([]); // said once
    ids[0] = { ...(ids[0] as Identity), runIds: ['c'] };
    expect(findDuplicates(ids, nameOf).warnings).toEqual([]);
    expect(ids[0]?.duplicateOf).toBeUndefined(); // its own server again: it votes
  });

  it('compares every master of a Redis Cluster node', () => {
    const { refusal } = findDuplicates([answered(['a', 'b']), answered(['c', 'b'])], nameOf);
    expect(refusal?.message).toContain('run_id b');
  });
});
