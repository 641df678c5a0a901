import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The version of the running distlock: the first package.json with a version found upwards
 * from the script (`dist/esm/cli/main.js`, through the symlink of an installed bin; the
 * package.json in dist/esm holds only its module type). The CommonJS build compiles this
 * file too, so it cannot use `import.meta.url`.
 */
export function packageVersion(script = process.argv[1] ?? ''): string {
  let dir: string;
  try {
    dir = dirname(realpathSync(script));
  } catch {
    return 'unknown';
  }
  for (;;) {
    const version = versionIn(join(dir, 'package.json'));
    if (version !== undefined) return version;
    const parent = dirname(dir);
    if (parent === dir) return 'unknown';
    dir = parent;
  }
}

function versionIn(file: string): string | undefined {
  try {
    const { version } = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown };
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined; // no package.json here (or not one we can read)
  }
}
