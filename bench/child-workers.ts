/**
 * Worker processes for the scenarios that run contenders in child processes (contention,
 * semaphore): forking them and waiting for one of their reports (the parent's side), and
 * talking to the parent (the worker's side).
 */
import { type ChildProcess, fork } from 'node:child_process';

/**
 * Forks `count` worker processes running `file` (TypeScript, through tsx), with `nodeFlags`
 * (`--no-opt`, say) given to Node.
 */
export function forkWorkers(
  file: URL,
  count: number,
  nodeFlags: readonly string[] = [],
): ChildProcess[] {
  const execArgv = ['--import', 'tsx', ...nodeFlags];
  return Array.from({ length: count }, () =>
    fork(file, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
}

/** The ids of the workers of process `index`, `perProcess` each. */
export function workerIdsOf(index: number, perProcess: number): number[] {
  return Array.from({ length: perProcess }, (_, w) => index * perProcess + w);
}

/** The child's next report of `type`, or `undefined` if it exits or `timeoutMs` passes first. */
export function awaitMessage<Report extends { readonly type: string }>(
  child: ChildProcess,
  type: Report['type'],
  timeoutMs: number,
): Promise<Report | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const onMessage = (m: Report) => m.type === type && finish(m);
    const onExit = () => finish(undefined);
    function finish(result: Report | undefined) {
      clearTimeout(timer);
      child.off('message', onMessage).off('exit', onExit);
      resolve(result);
    }
    child.on('message', onMessage).on('exit', onExit);
  });
}

/** In a worker: sends `message` to the parent; resolves once it was handed over. */
export function sendToParent<Report extends { readonly type: string }>(
  message: Report,
): Promise<void> {
  return new Promise((resolve) => process.send?.(message, undefined, {}, () => resolve()));
}

/** In a worker: the parent's next message. */
export function parentMessage<T>(): Promise<T> {
  return new Promise((resolve) => process.once('message', (message) => resolve(message as T)));
}
