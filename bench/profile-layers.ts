/**
 * Which layer a function of a V8 CPU profile belongs to: a folder of distlock's sources, the
 * client library, Node's internals, the garbage collector, or the time the process waited.
 *
 * distlock is loaded from its build (`dist/esm`, or another checkout's `dist/` for a
 * baseline). A built file with a source map is mapped through it to the source it came from,
 * whether the build keeps one file per source or bundles them; a file without one is placed
 * by its folder under `dist/<format>/`, and a file at the top of `dist/<format>/` without a
 * map is reported as "distlock (bundled)".
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The parts of a profile node's call frame the mapping reads (0-based positions). */
export interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
  readonly columnNumber: number;
}

/** The layers in the order the report lists them; others seen are appended. */
export const LAYERS = [
  'distlock src/engine',
  'distlock src/quorum',
  'distlock src/driver',
  'distlock src/lua',
  'distlock src/kinds',
  'distlock, other src',
  'distlock (bundled)',
  'ioredis',
  'other packages',
  'bench harness (and the floor)',
  'Node internals (node:*)',
  'socket writes (native)',
  'V8 built-ins and native',
  'native, outside JavaScript',
  'GC',
] as const;

/** Samples taken while the process waited (in libuv's poll): no CPU spent. */
export const IDLE = 'idle';

const OWN_FOLDERS = new Set(['engine', 'quorum', 'driver', 'lua', 'kinds']);
/** ioredis and the packages it runs on every command. */
const CLIENT_PACKAGES = new Set([
  'ioredis',
  'ioredis6',
  'denque',
  'redis-errors',
  'redis-parser',
  'standard-as-callback',
  '@ioredis/commands',
  'cluster-key-slot',
]);

/** The layer of one profiled function. */
export function layerOf(frame: CallFrame): string {
  switch (frame.functionName) {
    case '(garbage collector)':
      return 'GC';
    case '(idle)':
      return IDLE;
    case '(program)':
    case '(root)':
      return 'native, outside JavaScript';
  }
  if (frame.url === '') {
    // Node's stream writes: the system call, and on loopback the receiving side's kernel work.
    return /^write(?:v|Buffer|\w+String)$/.test(frame.functionName)
      ? 'socket writes (native)'
      : 'V8 built-ins and native';
  }
  if (frame.url.startsWith('node:')) return 'Node internals (node:*)';
  const path = frame.url.startsWith('file:') ? fileURLToPath(frame.url) : frame.url;
  const inPackages = path.lastIndexOf('/node_modules/');
  if (inPackages >= 0) return packageLayer(path.slice(inPackages + '/node_modules/'.length));
  const built = /\/dist\/(?:esm|cjs)\/(.+)$/.exec(path);
  if (built?.[1]) return builtLayer(path, built[1], frame);
  const source = sourceLayer(path);
  if (source) return source;
  if (path.includes('/bench/')) return 'bench harness (and the floor)';
  return 'other packages';
}

function packageLayer(inside: string): string {
  const parts = inside.split('/');
  const name = inside.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? '');
  return CLIENT_PACKAGES.has(name) ? 'ioredis' : 'other packages';
}

/** The layer of a source path (`…/src/engine/acquire.ts`), or undefined if it is none. */
function sourceLayer(source: string): string | undefined {
  if (source.includes('node_modules/'))
    return packageLayer(source.split('node_modules/').pop() ?? '');
  const match = /(?:^|\/)src\/(.+)$/.exec(source);
  if (!match?.[1]) return undefined;
  const folder = match[1].split('/');
  if (folder.length > 1 && OWN_FOLDERS.has(folder[0] ?? '')) return `distlock src/${folder[0]}`;
  return 'distlock, other src';
}

function builtLayer(path: string, inDist: string, frame: CallFrame): string {
  const map = sourceMapOf(path);
  if (map) {
    const entry = map.findEntry(frame.lineNumber, frame.columnNumber);
    const source = 'originalSource' in entry ? entry.originalSource : undefined;
    return (source && sourceLayer(source)) ?? 'distlock (bundled)';
  }
  if (!inDist.includes('/')) return 'distlock (bundled)';
  return sourceLayer(`src/${inDist}`) ?? 'distlock (bundled)';
}

const sourceMaps = new Map<string, SourceMap | undefined>();

/** The source map of a built file (a `.map` file or an inline one), if it has one. */
function sourceMapOf(path: string): SourceMap | undefined {
  if (sourceMaps.has(path)) return sourceMaps.get(path);
  let map: SourceMap | undefined;
  try {
    const code = readFileSync(path, 'utf8');
    const reference = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(code)?.[1];
    const inline = reference && /^data:application\/json[^,]*base64,(.*)$/.exec(reference)?.[1];
    const file = reference && !inline ? resolve(dirname(path), reference) : undefined;
    const json = inline
      ? Buffer.from(inline, 'base64').toString('utf8')
      : file && existsSync(file)
        ? readFileSync(file, 'utf8')
        : undefined;
    if (json) map = new SourceMap(JSON.parse(json) as SourceMapPayload);
  } catch {
    map = undefined;
  }
  sourceMaps.set(path, map);
  return map;
}
