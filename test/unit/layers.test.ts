/**
 * The layers of src/ (docs/architecture.md): every import, type-only ones included, points to
 * the importer's own layer or one below it, never up, and no files import each other in a
 * circle. Read from the source text, so a new file is covered the moment it exists.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** From the top down; a path belongs to the first layer with a matching prefix. */
const LAYERS: readonly { readonly name: string; readonly paths: readonly string[] }[] = [
  {
    name: 'entry points',
    paths: ['index.ts', 'cli/', 'nestjs/', 'schedule/', 'telemetry/', 'testing/'],
  },
  { name: 'facade', paths: ['locker.ts'] },
  { name: 'inventory', paths: ['inventory/'] },
  { name: 'kinds', paths: ['kinds/', 'fencing/'] },
  { name: 'engine', paths: ['engine/'] },
  { name: 'protocol', paths: ['lua/', 'quorum/'] },
  { name: 'config', paths: ['config/'] },
  { name: 'driver', paths: ['driver/'] },
  {
    name: 'base',
    paths: ['errors.ts', 'caught-errors.ts', 'node-result.ts', 'keys.ts', 'clock.ts', 'types/'],
  },
];

function layerOf(file: string): number {
  const index = LAYERS.findIndex((layer) => layer.paths.some((p) => file.startsWith(p)));
  if (index < 0) throw new Error(`src/${file} is in no layer: add it to LAYERS and the docs`);
  return index;
}

/** Every .ts file of src/, relative to it. */
function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.split('\\').join('/'))
    .sort();
}

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s*['"](\.[^'"]+)['"]/g;

/** The src files `file` imports (relative specifiers only), type-only imports included. */
function importsOf(file: string, text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(SPECIFIER)) {
    const target = normalize(join(dirname(file), match[1] ?? ''))
      .split('\\')
      .join('/');
    found.push(target.replace(/\.js$/, '.ts'));
  }
  return found;
}

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles()) {
    graph.set(file, importsOf(file, readFileSync(join(SRC, file), 'utf8')));
  }
  return graph;
}

/** Files that reach each other through imports, as circles of two or more (Tarjan's SCCs). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(target) ?? 0));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file) ?? 0, index.get(target) ?? 0));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const circle: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      circle.push(member);
    } while (member !== file);
    if (circle.length > 1 || graph.get(file)?.includes(file)) found.push(circle.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe('the layers of src/', () => {
  const graph = importGraph();

  it('reads the imports it checks (a type-only one included)', () => {
    expect(importsOf('engine/acquire.ts', "import type { X } from '../lua/script.js';")).toEqual([
      'lua/script.ts',
    ]);
    expect(
      circles(
        new Map([
          ['a', ['b']],
          ['b', ['a']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b']]);
    expect(graph.get('locker.ts')?.length).toBeGreaterThan(5);
  });

  it('has no import circles', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('imports only down the layers', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        if (!graph.has(target)) continue;
        if (layerOf(target) < layerOf(file)) {
          upward.push(
            `${file} (${LAYERS[layerOf(file)]?.name}) -> ${target} (${LAYERS[layerOf(target)]?.name})`,
          );
        }
      }
    }
    expect(upward).toEqual([]);
  });

  it('keeps each kind to itself, and the engine contract to itself', () => {
    const crossing: string[] = [];
    for (const [file, targets] of graph) {
      const kind = /^kinds\/([^/]+)\//.exec(file)?.[1];
      for (const target of targets) {
        const other = /^kinds\/([^/]+)\//.exec(target)?.[1];
        if (kind && other && other !== kind) crossing.push(`${file} -> ${target}`);
        if (file === 'engine/contract.ts' && target.startsWith('engine/')) {
          crossing.push(`${file} -> ${target}`);
        }
      }
    }
    expect(crossing).toEqual([]);
  });
});
