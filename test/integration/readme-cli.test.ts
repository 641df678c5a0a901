import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { parse } from 'shell-quote';
import { describe, expect, it } from 'vitest';
import { CLI } from '../support/cli.js';
import { documentationPages, parseFences, readPage } from '../support/documentation.js';

/**
 * Every `distlock` command line of the `sh` blocks of the README, of docs/ and of
 * bench/README.md, as written, goes through the built CLI's argument parsing: none may be a
 * usage error (exit 2). The nodes are swapped for a loopback port where nothing listens (no
 * traffic leaves the machine), so each line then ends in "unreachable" (69) or, for `cron`,
 * keeps running until it is stopped.
 */
function commandLines(page: string): { source: string; words: string[] }[] {
  return parseFences(page, readPage(page))
    .blocks.filter((block) => block.language === 'sh')
    .flatMap((block) => block.lines)
    .map(({ line, text }) => {
      const words: string[] = [];
      for (const entry of parse(text)) {
        if (typeof entry !== 'string') break; // an operator (&&, |) or a comment ends it
        words.push(entry);
      }
      return { source: `${page}:${line}`, words };
    })
    .filter(({ words: [first] }) => first === 'distlock');
}

async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  return address.port;
}

/** Runs the CLI with `args` for at most `ms`; its exit code (null if it was stopped) and stderr. */
function runFor(args: string[], env: NodeJS.ProcessEnv, ms: number) {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env } });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  return new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    }),
  );
}

/** How many command lines run at once. */
const PARALLEL = 4;
/** How long a `cron` line runs before it is stopped (it parsed if it got that far). */
const CRON_RUNS_MS = 3_000;
/** A line that has not ended in this long hangs. */
const HANG_MS = 30_000;

describe('the distlock command lines of the README and docs/', () => {
  const lines = documentationPages().flatMap(commandLines);

  it('are found (run, status, ls, break and cron), in the README and in docs/cli.md', () => {
    const subcommands = new Set(lines.map(({ words }) => words[1]));
    expect([...subcommands].sort()).toEqual(['break', 'cron', 'ls', 'run', 'status']);
    const pages = new Set(lines.map(({ source }) => source.split(':')[0]));
    expect([...pages]).toEqual(expect.arrayContaining(['README.md', 'docs/cli.md']));
  });

  it('all parse: none is a usage error', async () => {
    const url = `redis://127.0.0.1:${await deadPort()}`;
    const parsed = async ({ source, words }: { source: string; words: string[] }) => {
      const args = words.slice(1).map((word) => (/^rediss?:\/\//.test(word) ? url : word));
      // A `cron` line runs until stopped; any other ends on its own (69) or hangs.
      const limitMs = words[1] === 'cron' ? CRON_RUNS_MS : HANG_MS;
      const { code, stderr } = await runFor(args, { DISTLOCK_REDIS: url }, limitMs);
      // `ls --watch` redraws a terminal: on this pipe it refuses, saying so, before any I/O.
      const offTerminal = stderr.includes('--watch redraws one screen: run it on a terminal');
      return {
        source,
        line: words.join(' '),
        code,
        usage: stderr.includes('Usage:') && !offTerminal,
      };
    };
    // A few at a time: each line is a process that mostly waits (a `cron` line for 3 s).
    const results = [];
    for (let i = 0; i < lines.length; i += PARALLEL) {
      results.push(...(await Promise.all(lines.slice(i, i + PARALLEL).map(parsed))));
    }
    expect(results).toEqual(
      lines.map(({ source, words }) => ({
        source,
        line: words.join(' '),
        code: words[1] === 'cron' ? null : words.includes('--watch') ? 2 : 69,
        usage: false,
      })),
    );
  }, 120_000);
});
