/**
 * The in-memory Redis model, loaded on first use by `InMemoryRedis` (../in-memory-redis.ts):
 * it brings the Lua VM (fengari), which nothing else in distlock loads.
 */
export { textOf } from './bytes.js';
export { SimulatedRedisNode } from './node.js';
export { toConnectionValue } from './reply.js';
