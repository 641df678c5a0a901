/**
 * Exit codes of the `distlock` command. The command's own exit code passes through; these
 * are chosen from the BSD sysexits range so that they rarely collide with a command's, but
 * for a command that cannot be started, which exits as it would in a shell (126, 127).
 */
export const EXIT = {
  /** `distlock status`: the lock is free (0 = held, like `test` and `grep`). */
  free: 1,
  /** Bad arguments (like most CLIs). */
  usage: 2,
  /** Redis nodes unreachable: no quorum (`distlock status`: too few nodes read to tell). */
  unavailable: 69,
  /** The lock is held by someone else (`--no-wait`, or `--wait` ran out). */
  busy: 75,
  /** The lock was lost while the command ran; the command was stopped. */
  lost: 76,
  /** The command was found but cannot be run (not executable...), as in shells. */
  cannotRun: 126,
  /** The command was not found, as in shells. */
  notFound: 127,
} as const;
