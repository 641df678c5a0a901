/**
 * Prints which files of src/ one plain `acquire` (and then its `release`) runs code in, as V8's
 * precise coverage counts calls: the second acquisition of a warm locker, so that connecting
 * and first-call work are not counted. Usage: node --import tsx test/support/acquire-path.ts URL
 * Prints two JSON lines: {"acquire":[...]} and {"release":[...]}.
 */
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
import { Locker } from '../../src/index.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

interface Coverage {
  readonly result: readonly {
    readonly url: string;
    readonly functions: readonly { readonly ranges: readonly { readonly count: number }[] }[];
  }[];
}

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

/** The src files with a function called since the last take (precise coverage resets). */
async function filesEntered(): Promise<string[]> {
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as unknown as Coverage;
  const files = result
    .filter(({ url }) => url.startsWith('file://') && fileURLToPath(url).startsWith(SRC))
    .filter(({ functions }) => functions.some((f) => (f.ranges[0]?.count ?? 0) > 0))
    .map(({ url }) => fileURLToPath(url).slice(SRC.length));
  return [...new Set(files)].sort();
}

const url = process.argv[2];
if (!url) throw new Error('usage: acquire-path.ts redis://host:port');
const locker = new Locker({ nodes: [url] });
try {
  await (await locker.acquire('acquire-path:warm', { ttlMs: 10_000 })).release();
  await filesEntered();
  const lock = await locker.acquire('acquire-path', { ttlMs: 10_000 });
  console.log(JSON.stringify({ acquire: await filesEntered() }));
  await lock.release();
  console.log(JSON.stringify({ release: await filesEntered() }));
} finally {
  await locker.close();
  session.disconnect();
}
