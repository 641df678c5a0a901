// This folder's tests only (the repository's own config runs test/).
import { defineConfig } from 'vitest/config';

export default defineConfig({ test: { include: ['examples/unit-tests/*.test.mjs'] } });
