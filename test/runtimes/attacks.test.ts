// The attacks of issue 15, run as an attacker would: over real HTTP against the reference server on Node,
// Deno and Bun. Vitest on Node only: it spawns the other runtimes.
import { afterAll, describe, expect, test } from "vitest";
import {
  authorizePath, Browser, challengeOf, config, csrfOf, decide, killAll, PASSWORD, type Running, SECRETS, signIn, spaCode,
  startReference, token,
} from "./reference_process.ts";

afterAll(killAll);

const RUNTIMES = ["node", "deno", "bun"] as const;

async function withServer<T>(runtime: string, body: (server: Running) => Promise<T>, extra: Record<string, unknown> = {}): Promise<T> {
  const server = await startReference(runtime, config(extra));
  try {
    return await body(server);
  } finally {
    await server.stop();
  }
}

const bearer = (base: string, accessToken: string) =>
  fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${accessToken}` } }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });

describe.each(RUNTIMES)("on %s", (runtime) => {
  test("1. 60 concurrent password guesses: at most 5 are evaluated, and the right one among them does not win", async () => {
    await withServer(runtime, async ({ url }) => {
      const browser = new Browser(url);
      const path = authorizePath("spa", await challengeOf("v".repeat(43)));
      const csrf = csrfOf(await (await browser.request(path)).text());
      const guess = (password: string) =>
        browser.request(path, { form: { csrf, username: "alice", password } }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        });
      const wrong = Array.from({ length: 59 }, (_, i) => guess(`wrong-${i}`));
      // The right password arrives while the wrong ones are still being hashed.
      await new Promise((done) => setTimeout(done, 30));
      const right = guess(PASSWORD);
      const statuses = await Promise.all([...wrong, right]);
      const counts = Object.fromEntries([401, 429, 303].map((s) => [s, statuses.filter((x) => x === s).length]));
      expect(counts[401], JSON.stringify(statuses)).toBeLessThanOrEqual(5);
      expect(counts).toMatchObject({ 303: 0, 429: 60 - counts[401]! });
    });
  }, 60_000);

  test("3. a replayed code with another client's id, or a wrong verifier, revokes nothing", async () => {
    await withServer(runtime, async ({ url }) => {
      const { code, verifier } = await spaCode(url);
      const exchange = (fields: Record<string, string>) =>
        token(url, { grant_type: "authorization_code", redirect_uri: "http://127.0.0.1:9999/callback", code, ...fields });
      const issued = await exchange({ client_id: "spa", code_verifier: verifier });
      expect(issued.status).toBe(200);
      const accessToken = issued.body.access_token as string;

      expect((await exchange({ client_id: "other-spa", code_verifier: verifier })).body).toMatchObject({ error: "invalid_grant" });
      expect((await exchange({ client_id: "spa", code_verifier: "w".repeat(43) })).body).toMatchObject({ error: "invalid_grant" });
      expect(await bearer(url, accessToken)).toBe(200);
      // The code's own client, proven by its verifier, does trigger the replay revocation.
      expect((await exchange({ client_id: "spa", code_verifier: verifier })).body).toMatchObject({ error: "invalid_grant" });
      expect(await bearer(url, accessToken)).toBe(401);
    });
  }, 60_000);
});
