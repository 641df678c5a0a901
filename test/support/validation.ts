import { expect } from 'vitest';
import { InvalidArgumentError, LockError } from '../../src/index.js';

/** A node that fails the test if anything is ever sent to it. */
export const NO_IO = {
  name: 'no-io:1',
  send: async () => {
    throw new Error('no I/O may happen in these tests');
  },
  close: async () => {},
};

/** The `InvalidArgumentError` that `fn` throws synchronously; fails the test otherwise. */
export function thrown(fn: () => unknown): InvalidArgumentError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toBeInstanceOf(LockError);
    expect((error as LockError).code).toBe('INVALID_ARGUMENT');
    return error as InvalidArgumentError;
  }
  throw new Error('expected a synchronous InvalidArgumentError');
}
