import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { parse } from 'shell-quote';
import { describe, expect, it } from 'vitest';
import { CLI } from '../support/cli.js';

/**
 * Every `distlock` command line of the README's `sh` blocks, as written, goes through the
 * built CLI's argument parsing: none may be a usage error (exit 2). The nodes are swapped for
 * a loopback port where nothing listens (no traffic leaves the machine), so each line then
 * ends in "unreachable" (69) or, for `cron`, keeps running until it is stopped.
 */
function readmeCommandLines(markdown: string): string[][] {
  const blocks = markdown.split(/^```sh\n/m).slice(1);
  const lines = blocks.flatMap((block) => block.slice(0, block.indexOf('```')).split('\n'));
  return lines
    .map((line) => {
      const words: string[] = [];
      for (const entry of parse(line)) {
        if (typeof entry !== 'string') break; // an operator (&&, |) or a comment ends it
        words.push(entry);
      }
      return words;
    })
    .filter(([first]) => first === 'distlock');
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

describe("the README's distlock command lines", () => {
  const lines = readmeCommandLines(readFileSync('README.md', 'utf8'));

  it('are found (run, status and cron)', () => {
    const subcommands = new Set(lines.map((words) => words[1]));
    expect([...subcommands].sort()).toEqual(['cron', 'run', 'status']);
  });

  it('all parse: none is a usage error', async () => {
    const url = `redis://127.0.0.1:${await deadPort()}`;
    for (const words of lines) {
      const args = words.slice(1).map((word) => (/^rediss?:\/\//.test(word) ? url : word));
      const { code, stderr } = await runFor(args, { DISTLOCK_REDIS: url }, 3_000);
      expect({ line: words.join(' '), code, usage: stderr.includes('Usage:') }).toEqual({
        line: words.join(' '),
        code: words[1] === 'cron' ? null : 69,
        usage: false,
      });
    }
  }, 60_000);
});
