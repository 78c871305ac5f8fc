// Client authentication edges that mutation testing (issue 15 item 12) showed no test held: each test here fails
// when its rule is removed from lib/client_auth. Through `server.fetch` only, so vitest, bun and deno run it.
import { describe, expect, test } from "vitest";
import { basic } from "./token_helpers.ts";
import { fixture, TOKEN_URL } from "./helpers.ts";

const CC = { grant_type: "client_credentials", scope: "export" } as const;

describe("the dummy hash (an unknown client_id costs what a wrong secret costs)", () => {
  // A secret so long that hashing it dominates the request: without the dummy hash, an unknown client_id is
  // answered before any hashing, and the difference is a timing oracle that tells which client_ids exist.
  test("an unknown client_id with a long secret takes about as long as a known one with a wrong secret", async () => {
    const { server } = await fixture();
    const secret = "s".repeat(1_500_000);
    const headers = { backend: basic("backend", secret), nobody: basic("nobody", secret) };
    // Built before the clock starts, so only the server's work is timed.
    const requests = (clientId: keyof typeof headers) => Array.from({ length: 5 }, () => new Request(TOKEN_URL, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: headers[clientId] },
      body: new URLSearchParams(CC).toString(),
    }));
    const fastest = async (batch: Request[]): Promise<number> => {
      let best = Infinity;
      for (const request of batch) {
        const start = performance.now();
        const response = await server.fetch(request);
        best = Math.min(best, performance.now() - start);
        expect(response.status).toBe(401);
      }
      return best;
    };
    await fastest(requests("backend")); // warm-up
    const [known, unknown] = [await fastest(requests("backend")), await fastest(requests("nobody"))];
    // The fastest of five, so a pause of the machine's other work does not decide it.
    expect(unknown).toBeGreaterThan(known / 2);
  });
});
