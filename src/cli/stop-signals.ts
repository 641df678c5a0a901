/**
 * The signals that ask distlock to stop. It forwards them to the command's process group:
 * a command in a session of its own gets none of them from the terminal (Ctrl-C, hang-up).
 */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
