// The test files `npm run mutation` (Stryker, test/mutation/stryker.config.json) runs against each mutant: the in-process
// tree, which drives the handler without sockets, child processes or browsers.
import { defineConfig, type ViteUserConfig } from "vitest/config";

const config: ViteUserConfig = defineConfig({
  test: {
    include: [
      "test/*.test.ts", "test/core/*.test.ts", "test/endpoints/*.test.ts", "test/grants/*.test.ts", "test/client_auth/*.test.ts",
      "test/features/*.test.ts", "test/consent/*.test.ts", "test/storage/memory*.test.ts",
    ],
    // Not the tests that read files or spawn tools (the manifests, the README blocks): they prove no rule of a mutated module.
    exclude: ["test/manifests.test.ts", "test/readme.test.ts"],
    // A mutant run shares the cores with Stryker's other workers: the fuzz tests' 5 s default is too tight.
    testTimeout: 30_000,
  },
});

export default config;
