// A file that imports only the testing kit, in a project left at TypeScript's defaults (no
// `types` list: TypeScript 7 then loads no @types package of its own accord). The kit's
// declarations must bring the Node types they use.
import { startRedis } from 'distlock/testing';

const redis = await startRedis();
await redis.stop();
