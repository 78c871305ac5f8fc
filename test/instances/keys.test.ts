// Signing keys shared by two reference-server processes on one PostgreSQL, and again on one Redis: started
// together they make one key; what A signs, B's /jwks verifies and B's API accepts; two `keys rotate` run at once
// add one successor, which both instances then publish. Real servers on random loopback ports
// (test/support/databases.ts); skipped with a reason where not installed.
import { spawn } from "node:child_process";
import * as jose from "jose";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { type Database, type Skipped, started, startPostgres, startRedis } from "../support/databases.ts";
import { apiStatus, type Instance, killInstances, SECRETS, startInstance, token, writeConfig } from "./support.ts";

const servers: (Database | Skipped)[] = await Promise.all([startPostgres(), startRedis()]);
afterEach(killInstances);
afterAll(async () => {
  for (const server of servers) if (started(server)) await server.stop();
}, 60_000);

/** The CLI, as a child process; resolves with its exit code and output. */
function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", "lib/cli/serve.ts", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c));
  child.stderr.on("data", (c: Buffer) => (stderr += c));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })));
}

const kids = async (instance: Instance): Promise<string[]> =>
  ((await (await fetch(`${instance.url}/jwks`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);

for (const [name, server] of [["PostgreSQL", servers[0]], ["Redis", servers[1]]] as const) {
  describe.skipIf(!started(server))(`two instances on one ${name}`, () => {
    const db = server as Database;

    test("one key made at start, shared: A's tokens verify with B's /jwks and open B's API; two rotations at once add one key", async () => {
      // One secret for every instance on a shared store: it seals the private keys too.
      const file = writeConfig({ access_token_format: "jwt", secret: "shared-keys-secret-0123456789abcdef" });
      const [a, b] = await Promise.all([startInstance(file, ["--store", db.url]), startInstance(file, ["--store", db.url])]);
      const first = await kids(a);
      expect(first).toHaveLength(1);
      expect(await kids(b)).toEqual(first);

      const issued = await token(a.url, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
      const jwt = issued.body.access_token as string;
      expect(jose.decodeProtectedHeader(jwt)).toMatchObject({ typ: "at+jwt", kid: first[0] });
      const atB = jose.createRemoteJWKSet(new URL(`${b.url}/jwks`));
      expect((await jose.jwtVerify(jwt, atB, { issuer: a.url, typ: "at+jwt" })).payload.client_id).toBe("backend");
      expect(await apiStatus(b.url, jwt)).toBe(200);

      const rotations = await Promise.all([cli("keys", "rotate", "--config", file, "--store", db.url, "--json"), cli("keys", "rotate", "--config", file, "--store", db.url, "--json")]);
      for (const r of rotations) expect(r.code, r.stderr).toBe(0);
      const outcomes = rotations.map((r) => JSON.parse(r.stdout) as { rotated: boolean; keys: { kid: string; state: string }[] });
      expect(outcomes.map((o) => o.rotated).sort()).toEqual([false, true]);
      expect(outcomes[0]!.keys).toEqual(outcomes[1]!.keys);
      const next = outcomes[0]!.keys.find((k) => k.state === "next")!.kid;
      const listed = JSON.parse((await cli("keys", "list", "--config", file, "--store", db.url, "--json")).stdout) as { kid: string }[];
      expect(listed.map((k) => k.kid)).toEqual([first[0], next]);

      // Each instance reads the set again within 10 s and publishes the successor; the old token still verifies.
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && ((await kids(a)).length < 2 || (await kids(b)).length < 2)) await new Promise((r) => setTimeout(r, 500));
      expect([await kids(a), await kids(b)]).toEqual([[first[0], next], [first[0], next]]);
      expect((await jose.jwtVerify(jwt, jose.createRemoteJWKSet(new URL(`${a.url}/jwks`)), { issuer: a.url })).payload.sub).toBe("backend");
    }, 120_000);
  });
}
