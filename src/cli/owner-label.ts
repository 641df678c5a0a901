import { MAX_OWNER_LENGTH, processOwner } from '../config/options.js';

/**
 * The owner label of a lock that `distlock run` or `distlock cron` takes, as `distlock
 * status` shows it: this host and process (as a locker's default owner), and the command
 * (`web-3:4242 ./backup.sh --full`). Cut to the longest label (whole characters, an ellipsis
 * last), control characters as spaces: a label is shown on terminals.
 */
export function commandOwner(command: string, args: readonly string[]): string {
  const label = [processOwner(), command, ...args]
    .join(' ')
    .replace(/\p{Cc}/gu, ' ')
    .replace(/\p{Cs}/gu, '\uFFFD');
  if (label.length <= MAX_OWNER_LENGTH) return label;
  let cut = '';
  for (const character of label) {
    if (cut.length + character.length > MAX_OWNER_LENGTH - 1) break;
    cut += character;
  }
  return `${cut}…`;
}
