/**
 * Milliseconds on a clock that distlock and its guardian read alike, so that a lease's end
 * crosses from one process to the other as an instant: a guardian that reads it late acts
 * at once, instead of adding its delay to the lease.
 *
 * Node: `process.hrtime.bigint()`, the system's monotonic clock (CLOCK_MONOTONIC on Linux,
 * `mach_absolute_time` on macOS): one clock for every process, which never steps. Bun's and
 * Deno's `hrtime` count from their process's start instead, so under them it is the wall
 * clock at the process's start plus its monotonic time since (`performance.timeOrigin +
 * performance.now()`): alike in two processes unless the wall clock was stepped between
 * their starts. {@link Guardian} checks, at its start, that the guardian's reading falls
 * between two of distlock's, and refuses to run a command when it does not.
 */
export function sharedNow(): number {
  return SYSTEM_WIDE_HRTIME
    ? Number(process.hrtime.bigint()) / 1e6
    : performance.timeOrigin + performance.now();
}

/** Whether `process.hrtime` is the system's monotonic clock (Node), not the process's. */
const SYSTEM_WIDE_HRTIME = !('Bun' in globalThis || 'Deno' in globalThis);
