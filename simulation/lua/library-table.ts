import type { LuaFunction } from './values.js';
import { LuaTable } from './values.js';

/** A library's table: read-only, as Redis 7.0 makes every library table. */
export function libraryTable(functions: Record<string, LuaFunction>): LuaTable {
  const table = new LuaTable([], true);
  for (const [name, f] of Object.entries(functions)) table.set(name, f);
  return table;
}
