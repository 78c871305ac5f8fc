// The test files `npm run mutation` (Stryker, stryker.config.json) runs against each mutant: the in-process
// tree, which drives the handler without sockets, child processes or browsers.
import { defineConfig, type ViteUserConfig } from "vitest/config";

const config: ViteUserConfig = defineConfig({
  test: {
    include: ["test/*.test.ts", "test/consent/*.test.ts", "test/storage/memory.test.ts"],
    exclude: ["test/manifests.test.ts"],
  },
});

export default config;
