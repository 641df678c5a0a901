import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

/** A JavaScript runtime that runs distlock's examples and its command as users run them. */
export interface Runtime {
  /** As the README names it. */
  readonly name: 'Node' | 'Bun' | 'Deno';
  /** The executable and what goes before a script's path. */
  readonly command: string;
  readonly args: readonly string[];
}

/**
 * The permissions the README gives Deno for the examples, which start their own redis-server
 * (`distlock/testing`: a temporary directory, a child process) and the command (`run` starts
 * the command and its guardian).
 */
export const DENO_PERMISSIONS = [
  '--allow-net',
  '--allow-env',
  '--allow-read',
  '--allow-write',
  '--allow-run',
] as const;

export const NODE: Runtime = { name: 'Node', command: process.execPath, args: [] };

/** Bun and Deno, installed from npm as the repository's dev dependencies. */
export const OTHER_RUNTIMES: readonly Runtime[] = [
  { name: 'Bun', command: 'node_modules/.bin/bun', args: [] },
  { name: 'Deno', command: 'node_modules/.bin/deno', args: ['run', ...DENO_PERMISSIONS] },
];

/** The version of the npm package `name` that the repository installed. */
export function installedVersion(name: string): string {
  const path = new URL(`../../node_modules/${name}/package.json`, import.meta.url);
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
}

/** Runs `script` (with `args`) under `runtime`; its stdout's non-empty lines. */
export async function runScript(
  runtime: Runtime,
  script: string,
  options: { timeoutMs: number; args?: readonly string[] },
): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    runtime.command,
    [...runtime.args, script, ...(options.args ?? [])],
    { encoding: 'utf8', timeout: options.timeoutMs },
  );
  return stdout.split('\n').filter(Boolean);
}
