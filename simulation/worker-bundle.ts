/**
 * The simulation pool's worker code as one JavaScript file: explore-worker.ts and the sources
 * it imports, bundled by esbuild (the packages imported as they are). It runs the same code as
 * tsx does, without the naming call tsx puts on every function and class it makes (esbuild's
 * `keepNames`): seeds 1 to 250, one worker on one core, 1.15 to 1.32 times the schedules a
 * second over 3 alternating pairs (with `keepNames`, no faster than tsx), the same histories
 * bit for bit.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { threadId } from 'node:worker_threads';
import { build } from 'esbuild';

/** A bundle older than this is removed when another is written (sources changed since). */
const STALE_MS = 86_400_000;

/**
 * Bundles the worker and returns its file. The file sits next to the packages (so that they
 * resolve from it) and is named by its contents: a process that bundles other sources (an
 * edit between runs) writes another file, never over one whose workers may still be starting.
 * It is written under a name of its own first, then renamed, so no one reads half a file.
 */
export async function bundleWorker(): Promise<string> {
  const entry = fileURLToPath(new URL('./explore-worker.ts', import.meta.url));
  const directory = fileURLToPath(new URL('../node_modules/.cache/distlock/', import.meta.url));
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node}`,
    packages: 'external',
    sourcemap: 'inline',
    write: false,
    logLevel: 'warning',
    // src/driver/libraries.ts loads some packages with `require` where there is one: in an
    // ES module bundle there is none, and esbuild's stand-in would throw.
    banner: {
      js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);",
    },
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error('bundling the simulation worker produced no file');
  const renamed = renamedClasses(output.text);
  if (renamed.length > 0) {
    throw new Error(
      `bundling the simulation worker renamed the class(es) ${renamed.join(', ')}, whose name another module's top-level name shares: error names, which the histories record, would differ from a replay through tsx. Rename one of the two.`,
    );
  }
  const hash = createHash('sha256').update(output.contents).digest('hex').slice(0, 16);
  mkdirSync(directory, { recursive: true });
  removeStale(directory);
  const file = `${directory}simulation-worker-${hash}.mjs`;
  const written = `${file}.${process.pid}-${threadId}`;
  writeFileSync(written, output.contents);
  renameSync(written, file);
  return file;
}

/**
 * The top-level classes of `code` that esbuild renamed, because another module declares the
 * same name (`var LockLostError2 = class ...`). A class takes its `name` from that variable,
 * and errors are named after their class (src/errors.ts).
 */
export function renamedClasses(code: string): string[] {
  const renamed: string[] = [];
  for (const [, name, base] of code.matchAll(/^var (([A-Za-z_$][\w$]*?)\d+) = class\b/gm)) {
    const escaped = (base as string).replaceAll('$', '\\$');
    const declared = new RegExp(
      `^(?:var|let|const|class|(?:async )?function\\*?) ${escaped}\\b`,
      'm',
    );
    if (declared.test(code)) renamed.push(name as string);
  }
  return renamed;
}

function removeStale(directory: string): void {
  const now = Date.now();
  for (const name of readdirSync(directory)) {
    if (!name.startsWith('simulation-worker-')) continue;
    const path = `${directory}${name}`;
    try {
      if (now - statSync(path).mtimeMs > STALE_MS) rmSync(path, { force: true });
    } catch {
      // Removed meanwhile by another process.
    }
  }
}
