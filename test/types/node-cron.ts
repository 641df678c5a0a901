// Type-level test, checked by `npm run typecheck` (never run): the coordinator of
// distlock/node-cron, written without importing node-cron, is what node-cron's own types take.
import cron, { type RunCoordinator, type TaskOptions } from 'node-cron';
import type { Locker } from '../../src/index.js';
import { runCoordinator } from '../../src/schedule/node-cron.js';

declare const locker: Locker;

export const coordinator: RunCoordinator = runCoordinator(locker, { lockAtLeastFor: 1_000 });
export const options: TaskOptions = {
  name: 'report',
  distributed: true,
  runCoordinator: runCoordinator(locker),
};
cron.setRunCoordinator(runCoordinator(locker));
