// The resource guard of the server's own process (server.protect, verifyAccessToken; RFC 6750).
import { describe, expect, test } from "vitest";
import { OAuthError } from "../mod.ts";
import { bearer, codeRequest, consent, errorOf, fixture, ISSUER, postToken, SECRETS, spaTokens } from "./helpers.ts";

async function token(server: Awaited<ReturnType<typeof fixture>>["server"], scope = "export"): Promise<string> {
  const response = await postToken(server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope });
  return (await response.json()).access_token;
}

describe("server.protect", () => {
  const call = async (authorization?: string) => {
    const f = await fixture();
    const api = f.server.protect("export", (_request, info) => Response.json({ ok: true, info }));
    const headers: Record<string, string> = authorization === undefined ? {} : { authorization };
    return { f, api, response: (request?: string) => api(new Request(`${ISSUER}/api/export`, { headers: request === undefined ? headers : { authorization: request } })) };
  };

  test("a valid token reaches the handler with client, scope and expiry", async () => {
    const { f, response } = await call();
    const access = await token(f.server);
    const res = await response(`Bearer ${access}`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.info).toEqual({ client_id: "backend", scope: "export", exp: Math.floor(f.clock.now / 1000) + 3600 });
  });

  test("the scheme is case-insensitive (RFC 9110 §11.1)", async () => {
    const { f, response } = await call();
    expect((await response(`bearer ${await token(f.server)}`)).status).toBe(200);
  });

  test("no token: 401 with a bare Bearer challenge (no error code, RFC 6750 §3.1)", async () => {
    const { response } = await call();
    const res = await response();
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(`Bearer realm="${ISSUER}"`);
  });

  test("another scheme counts as no token", async () => {
    const { response } = await call();
    const res = await response("Basic YTpi");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(`Bearer realm="${ISSUER}"`);
  });

  test.each([["Bearer"], ["Bearer "], ["Bearer a b"], ["Bearer tok,en"], ["Bearer \u00e9t\u00e9"]])(
    "malformed %j: 400 invalid_request",
    async (header) => {
      const { response } = await call();
      const res = await response(header);
      expect(res.status).toBe(400);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm=".*", error="invalid_request"/);
    },
  );

  test("an unknown token: 401 invalid_token", async () => {
    const { response } = await call();
    const res = await response("Bearer " + "x".repeat(43));
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect((await res.json()).error).toBe("invalid_token");
  });

  test("an expired token: 401 invalid_token", async () => {
    const { f, response } = await call();
    const access = await token(f.server);
    f.clock.advance(3600);
    const res = await response(`Bearer ${access}`);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  test("a revoked token: 401 invalid_token", async () => {
    const { f, response } = await call();
    const access = await token(f.server);
    const revoked = await f.server.fetch(new Request(`${ISSUER}/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: access, client_id: "backend", client_secret: SECRETS.backend }).toString(),
    }));
    expect(revoked.status).toBe(200);
    expect((await response(`Bearer ${access}`)).status).toBe(401);
  });

  test("a token without the required scope: 403 insufficient_scope naming the scope", async () => {
    const { f, response } = await call();
    const res = await response(`Bearer ${await token(f.server, "read")}`);
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
    expect(res.headers.get("www-authenticate")).toContain('scope="export"');
  });
});

test("the required scope is matched as a whole scope token, never as part of one", async () => {
  const { server } = await fixture();
  const request = new Request(`${ISSUER}/api`, { headers: { authorization: `Bearer ${await token(server, "export")}` } });
  expect((await server.verifyAccessToken(request, "export")).scope).toBe("export");
  for (const part of ["expor", "port", "x", "export "]) {
    const error = await server.verifyAccessToken(request, part).catch((e: unknown) => e);
    expect((error as OAuthError).code, part).toBe("insufficient_scope");
  }
});

test("verifyAccessToken throws OAuthError with the status and challenge to send", async () => {
  const { server } = await fixture();
  const error = await server.verifyAccessToken(new Request(`${ISSUER}/api`)).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(OAuthError);
  expect((error as OAuthError).status).toBe(401);
  expect((error as OAuthError).headers["www-authenticate"]).toBe(`Bearer realm="${ISSUER}"`);
});

test("a failing store is a 500 server_error from protect, reported, never thrown", async () => {
  const errors: unknown[] = [];
  const f = await fixture({ onError: (e) => errors.push(e) });
  f.storage.findAccessToken = () => Promise.reject(new Error("disk on fire"));
  const api = f.server.protect(undefined, () => new Response("unreachable"));
  const res = await api(new Request(`${ISSUER}/api`, { headers: { authorization: "Bearer abc" } }));
  expect(res.status).toBe(500);
  expect(await res.text()).not.toContain("disk on fire");
  expect(errors).toHaveLength(1);
});

describe("the Authorization header's grammar (RFC 6750 §2.1: \"Bearer\" 1*SP b64token)", () => {
  const guard = async () => {
    const f = await fixture();
    return { f, check: (authorization: string) => f.server.verifyAuthorization(authorization).then((info) => info, (error: OAuthError) => error) };
  };

  test("a scheme that only starts with Bearer is another scheme: no token, a bare challenge", async () => {
    const { check } = await guard();
    const error = await check("Bearerx abc") as OAuthError;
    expect([error.status, error.headers["www-authenticate"]]).toEqual([401, `Bearer realm="${ISSUER}"`]);
  });

  test("another scheme whose credentials contain \"Bearer \" is still another scheme", async () => {
    const { check } = await guard();
    const error = await check("Token Bearer abc") as OAuthError;
    expect([error.status, error.headers["www-authenticate"]]).toEqual([401, `Bearer realm="${ISSUER}"`]);
  });

  test("several spaces after the scheme, and trailing spaces, are allowed", async () => {
    const { f, check } = await guard();
    const access = await token(f.server);
    for (const header of [`Bearer   ${access}`, `Bearer ${access}  `]) {
      expect(await check(header), JSON.stringify(header)).toMatchObject({ client_id: "backend" });
    }
  });

  test("a b64token may end in '=' padding: an unknown such token is invalid_token, not malformed", async () => {
    const { check } = await guard();
    for (const header of ["Bearer abc=", "Bearer a+b/c=="]) {
      const error = await check(header) as OAuthError;
      expect([header, error.code, error.status]).toEqual([header, "invalid_token", 401]);
    }
  });

  test("the challenge names the error and its description, and only insufficient_scope names a scope", async () => {
    const { check } = await guard();
    const error = await check("Bearer unknown-token") as OAuthError;
    expect(error.headers["www-authenticate"]).toBe(
      `Bearer realm="${ISSUER}", error="invalid_token", error_description="The access token is invalid or has expired"`,
    );
  });
});

describe("what the guard says about a token", () => {
  test("a client_credentials token has no user: exactly client_id, scope and exp", async () => {
    const { server } = await fixture();
    const info = await server.verifyAuthorization(`Bearer ${await token(server)}`);
    expect(Object.keys(info).sort()).toEqual(["client_id", "exp", "scope"]);
  });

  test("a token whose client is gone (deleted while the token was being checked) is invalid_token, not a 500", async () => {
    const { server, storage } = await fixture();
    const access = await token(server);
    storage.getClient = () => Promise.resolve(null);
    await expect(server.verifyAuthorization(`Bearer ${access}`)).rejects.toMatchObject({ code: "invalid_token", status: 401 });
  });
});

describe("access tokens", () => {
  const refresh = (server: Awaited<ReturnType<typeof fixture>>["server"], token: string, extra: Record<string, string> = {}) =>
    postToken(server, { grant_type: "refresh_token", client_id: "spa", refresh_token: token, ...extra });

  describe("access tokens", () => {
    test("expire after expires_in seconds", async () => {
      const { server, clock } = await fixture();
      const response = await postToken(server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
      const { access_token, expires_in } = await response.json();
      expect(expires_in).toBe(3600);
      clock.advance(3599);
      await expect(bearer(server, access_token)).resolves.toMatchObject({ client_id: "backend", scope: "export" });
      clock.advance(1);
      await expect(bearer(server, access_token)).rejects.toMatchObject({ code: "invalid_token" });
    });

    test("lifetimes are configurable", async () => {
      const { server } = await fixture({ lifetimes: { accessToken: 60 } });
      const response = await postToken(server, { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" });
      expect((await response.json()).expires_in).toBe(60);
    });

    test("a paused client's tokens stop working, and work again when it resumes", async () => {
      const { server } = await fixture();
      const tokens = await spaTokens(server);
      await server.clients.pause("spa");
      await expect(bearer(server, tokens.access_token)).rejects.toMatchObject({ code: "invalid_token" });
      expect(await errorOf(await refresh(server, tokens.refresh_token))).toMatchObject({ status: 401, error: "invalid_client" });
      expect((await consent(server, codeRequest("spa")).catch((e: Error) => e)) instanceof Error).toBe(true);
      await server.clients.resume("spa");
      await expect(bearer(server, tokens.access_token)).resolves.toMatchObject({ client_id: "spa" });
    });
  });
});

// What server.protect does with a token's audience (RFC 8707; issue 21 finding 3): a token bound to resources
// opens only the API whose `audience` is one of them; a token bound to none opens it unless requireAudience.
describe("server.protect and the audience", () => {
  const MCP_RESOURCE = "https://mcp.example.com/mcp";
  const API = "https://auth.example.com/api";

  async function tokens() {
    const f = await fixture({ resources: [MCP_RESOURCE, API] });
    const cc = async (resource?: string) => (await (await postToken(f.server, {
      grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export", ...(resource ? { resource } : {}),
    })).json()).access_token as string;
    return { f, unbound: await cc(), mcp: await cc(MCP_RESOURCE), api: await cc(API) };
  }
  const status = async (api: (r: Request) => Promise<Response>, token: string) => {
    const response = await api(new Request(`${ISSUER}/api/export`, { headers: { authorization: `Bearer ${token}` } }));
    return [response.status, response.status === 401 ? (await response.json()).error : "ok"];
  };

  test("by default a token bound to any resource is refused: it was minted for that resource only", async () => {
    const { f, unbound, mcp, api } = await tokens();
    const guarded = f.server.protect("export", () => new Response("ok"));
    expect(await status(guarded, unbound)).toEqual([200, "ok"]);
    expect(await status(guarded, mcp)).toEqual([401, "invalid_token"]);
    expect(await status(guarded, api)).toEqual([401, "invalid_token"]);
  });

  test("with an audience, a token bound to it passes (its canonical form too), one bound elsewhere does not", async () => {
    const { f, unbound, mcp, api } = await tokens();
    for (const audience of [API, "HTTPS://AUTH.example.com/api"]) {
      const guarded = f.server.protect("export", () => new Response("ok"), { audience });
      expect(await status(guarded, api)).toEqual([200, "ok"]);
      expect(await status(guarded, unbound)).toEqual([200, "ok"]);
      expect(await status(guarded, mcp)).toEqual([401, "invalid_token"]);
    }
    const strict = f.server.protect("export", () => new Response("ok"), { audience: API, requireAudience: true });
    expect(await status(strict, unbound)).toEqual([401, "invalid_token"]);
    expect(await status(strict, api)).toEqual([200, "ok"]);
  });

  test("the audience is checked before the scope: another resource's token gets 401, not 403", async () => {
    const { f, mcp } = await tokens();
    expect(await status(f.server.protect("admin", () => new Response("ok")), mcp)).toEqual([401, "invalid_token"]);
  });

  test("bad options are refused when the API is guarded", async () => {
    const { f } = await tokens();
    expect(() => f.server.protect(undefined, () => new Response(), { audience: "/api" })).toThrow(TypeError);
    expect(() => f.server.protect(undefined, () => new Response(), { requireAudience: true })).toThrow(/needs "audience"/);
  });
});
