// The consent form's CSRF token (lib/consent/csrf.ts): bound to the request, ten minutes, never from the future.
import { describe, expect, test } from "vitest";
import { authorizeUrl, codeRequest, csrfOf, fixture, getAuthorize } from "../helpers.ts";

describe("the consent form's CSRF token", () => {
  test("is accepted 10 minutes after the page and refused 1 ms later", async () => {
    const { server, clock } = await fixture();
    const params = codeRequest("web");
    const post = async (csrf: string) => server.fetch(new Request(authorizeUrl(params), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ decision: "allow", csrf }).toString(),
    }));
    const first = csrfOf(await (await getAuthorize(server, params)).text());
    const second = csrfOf(await (await getAuthorize(server, params)).text());
    clock.now += 10 * 60 * 1000;
    expect((await post(first)).status).toBe(303);
    clock.now += 1;
    expect((await post(second)).status).toBe(403);
  });
});

describe("the consent CSRF token, malformed or from the future", () => {
  const post = (server: Awaited<ReturnType<typeof fixture>>["server"], csrf: string) => server.fetch(new Request(authorizeUrl(codeRequest("web")), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ decision: "allow", csrf }).toString(),
  }));

  test.each(["", "abc", "a.b", "a.b.c.d", "zz.nonce.mac", "..", "1.2.3"])("%j is refused with 403, never a 500", async (csrf) => {
    const { server } = await fixture();
    expect((await post(server, csrf)).status).toBe(403);
  });

  test("a token issued after the clock's now (the clock went back) is refused", async () => {
    const { server, clock } = await fixture();
    const csrf = csrfOf(await (await getAuthorize(server, codeRequest("web"))).text());
    clock.now -= 1;
    expect((await post(server, csrf)).status).toBe(403);
    clock.now += 1;
    expect((await post(server, csrf)).status).toBe(303);
  });
});
