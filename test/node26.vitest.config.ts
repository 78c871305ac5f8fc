// The test files `npm run test:node26` runs on Node 26, the current LTS line (every other npm script runs the
// oldest supported line, Node 22): the tree that also runs on Bun and Deno (test/bunfig.toml's list), plus the
// Node adapter and the command line, which are Node's own. The slow folders (browsers, databases and processes,
// bench, conformance, adversarial) stay on Node 22.
import { defineConfig, type ViteUserConfig } from "vitest/config";

const config: ViteUserConfig = defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [
      "test/browser/**",
      "test/mcp/**",
      "test/bench/**",
      "test/conformance/**",
      "test/adversarial/**",
      "test/package/**",
      "test/shims/**",
      "test/support/**",
      "test/instances/**",
      "test/runtimes/serve.test.ts",
      "test/runtimes/attacks.test.ts",
      "test/storage/postgres.test.ts",
      "test/storage/redis.test.ts",
      "test/storage/races.test.ts",
      "test/storage/outage.test.ts",
    ],
  },
});

export default config;
