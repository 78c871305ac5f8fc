/**
 * Custom drivers and in-process modules: the module shapes the loaders accept, and a whole run through the
 * CLI with `--module` (no socket) and `--driver`.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { driverFromModule, fetchFromModule } from "../../conformance/mod.ts";
import { TARGET_FILE } from "./reference.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const options = { deny: false, fetch: () => Promise.reject(new Error("unused")) };

describe("driverFromModule", () => {
  it("accepts a named approve, a default object or a default function, returning a URL or a string", async () => {
    const url = new URL("http://as.test/authorize");
    const back = "http://client.test/cb?code=1";
    for (const module of [
      { approve: () => back },
      { default: { approve: () => Promise.resolve(new URL(back)) } },
      { default: () => back },
    ]) {
      expect((await driverFromModule(module, "m").approve(url, options)).href).toBe(back);
    }
  });

  it("names the module when it exports no approve, or approve returns no URL", async () => {
    expect(() => driverFromModule({ login: () => {} }, "sso.ts")).toThrow(`Cannot load driver "sso.ts": it must export approve(authorizeUrl, { deny, fetch })`);
    await expect(driverFromModule({ approve: () => 42 }, "sso.ts").approve(new URL("http://a.test/"), options)).rejects.toThrow(/returned 42/);
  });
});

describe("fetchFromModule", () => {
  it("accepts fetch, a default handler, or an object with a fetch method (bound)", async () => {
    const app = { greeting: "hi", fetch(this: { greeting: string }) { return new Response(this.greeting); } };
    for (const module of [{ fetch: () => new Response("hi") }, { default: () => new Response("hi") }, { default: app }]) {
      const response = await fetchFromModule(module, "m")(new Request("http://a.test/"));
      expect(await response.text()).toBe("hi");
    }
    expect(() => fetchFromModule({ handler: () => {} }, "app.ts")).toThrow(/must export a fetch handler/);
  });
});

describe("the CLI with --module and --driver", () => {
  it("runs the authorization cases in-process through a custom driver", () => {
    const result = spawnSync(process.execPath, [
      "--import", "tsx", "conformance/cli.ts", "--target", TARGET_FILE,
      "--module", "conformance/targets/reference_app.ts",
      "--driver", "test/conformance/fixtures/reference_driver.ts",
      "--only", "AUTHZ-*,SEC-CODE-*,TOKEN-AC-PUB-*",
    ], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/PASS +AUTHZ-DENY-ACCESS_DENIED/);
    expect(result.stdout.trimEnd().split("\n").at(-1)).toMatch(/^\d+ passed, 0 failed, 0 blocked$/);
    expect(result.status).toBe(0);
  }, 60_000);
});
