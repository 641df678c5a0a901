import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** A window for headless Chromium: its size, and the URL hash to open the page with. */
export interface Viewport {
  readonly width: number;
  /** @default 900 */
  readonly height?: number;
  /** e.g. `#from=100&to=150` */
  readonly hash?: string;
}

/**
 * Opens `file` in headless Chromium (Debian's `chromium` on the PATH) at `viewport`, runs its
 * scripts and returns the DOM they left (`--dump-dom`). Rejects when a script of the page threw,
 * and when Chromium is missing: install it with `apt-get install chromium` (.ci/run does).
 */
export async function dumpDom(file: string, viewport: Viewport): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'distlock-chromium-'));
  const url = `${pathToFileURL(file).href}${viewport.hash ?? ''}`;
  const args = [
    '--headless',
    '--no-sandbox', // Chromium will not run as root with its sandbox
    '--disable-gpu',
    '--hide-scrollbars',
    `--user-data-dir=${profile}`,
    `--window-size=${viewport.width},${viewport.height ?? 900}`,
    '--enable-logging=stderr', // the page's console, to see uncaught errors
    '--v=0',
    '--virtual-time-budget=1000', // let timers and animation frames run before the dump
    '--dump-dom',
    url,
  ];
  try {
    return await new Promise((resolve, reject) => {
      execFile(
        'chromium',
        args,
        { timeout: 60_000, maxBuffer: 64 << 20 },
        (error, stdout, stderr) => {
          if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT') {
            reject(
              new Error('chromium is not on the PATH: apt-get install chromium', { cause: error }),
            );
          } else if (error) {
            reject(new Error(`chromium failed on ${url}:\n${stderr}`, { cause: error }));
          } else if (/CONSOLE.*Uncaught/.test(stderr)) {
            const errors = stderr.split('\n').filter((line) => /CONSOLE.*Uncaught/.test(line));
            reject(new Error(`the page threw in chromium:\n${errors.join('\n')}`));
          } else {
            resolve(stdout);
          }
        },
      );
    });
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
