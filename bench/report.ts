import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import type { UncontendedRow } from './uncontended.js';

const FLOOR = 'ioredis floor';
const OURS = 'distlock';

/** Prints the tables, and writes them (with the raw figures) under bench/results/. */
export async function report(
  results: Record<string, unknown>,
  run: { seconds: number; reps: number },
): Promise<void> {
  const meta = {
    date: new Date().toISOString(),
    redis: execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim().split(' ')[2],
    node: process.version,
    machine: `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`,
    ...run,
  };
  const sections: string[] = [
    `Run ${meta.date.slice(0, 10)}, Redis ${meta.redis?.replace('v=', '')}, Node ${meta.node}, ${meta.machine}; median of ${run.reps} runs of ${run.seconds} s.`,
  ];
  if (results.uncontended) sections.push(uncontendedTable(results.uncontended as UncontendedRow[]));
  const markdown = `${sections.join('\n\n')}\n`;
  console.log(`\n${markdown}`);
  mkdirSync('bench/results', { recursive: true });
  const stamp = meta.date.replace(/[:.]/g, '-');
  writeFileSync(`bench/results/${stamp}.json`, `${JSON.stringify({ meta, results }, null, 2)}\n`);
  writeFileSync('bench/results/latest.json', `${JSON.stringify({ meta, results }, null, 2)}\n`);
  writeFileSync('bench/results/latest.md', markdown);
}

/** Markdown table from rows of cells. */
export function table(header: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const line = (cells: readonly unknown[]) => `| ${cells.map(String).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** `value / reference`, as `0.97×`. */
export function ratio(value: number, reference: number | undefined): string {
  return reference ? `${(value / reference).toFixed(2)}×` : '–';
}

function uncontendedTable(rows: readonly UncontendedRow[]): string {
  const out: (string | number)[][] = [];
  const cells = new Set(rows.map((r) => `${r.nodes}/${r.concurrency}`));
  for (const cell of cells) {
    const inCell = rows.filter((r) => `${r.nodes}/${r.concurrency}` === cell);
    const floor = inCell.find((r) => r.contender === FLOOR)?.cyclesPerSec;
    const bestPeer = Math.max(
      ...inCell
        .filter((r) => r.contender !== FLOOR && r.contender !== OURS)
        .map((r) => r.cyclesPerSec),
    );
    for (const r of inCell) {
      out.push([
        r.nodes,
        r.concurrency,
        r.contender === OURS ? `**${r.contender}**` : r.contender,
        r.cyclesPerSec,
        ratio(r.cyclesPerSec, floor),
        ratio(r.cyclesPerSec, bestPeer),
        r.p50Ms,
        r.p99Ms,
      ]);
    }
  }
  return `### 1. Uncontended acquire + release (distinct keys)\n\n${table(
    ['nodes', 'conc.', 'library', 'cycles/s', 'vs floor', 'vs best peer', 'p50 ms', 'p99 ms'],
    out,
  )}`;
}
