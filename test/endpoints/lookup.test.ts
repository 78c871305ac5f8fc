// Finding a presented token of either kind, for revocation and introspection (lib/endpoints/lookup.ts).
import { describe, expect, test } from "vitest";
import type { Storage } from "../../lib/storage/types.ts";
import { memoryStorage } from "../../lib/storage/memory.ts";
import { Clock, fixture, ISSUER, postToken, REDIRECT, SECRETS, webCode } from "../helpers.ts";

const basic = (id: string, secret: string) => ({ authorization: `Basic ${btoa(`${id}:${secret}`)}` });

const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = basic("web", SECRETS.web)) =>
  new Request(`${ISSUER}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
  });

/** A memory store that records which token lookups it was asked for, in order. */
function recordingStore(clock: Clock): { storage: Storage; lookups: string[] } {
  const storage = memoryStorage({ clock: clock.read });
  const lookups: string[] = [];
  const { findAccessToken, findRefreshToken } = storage;
  storage.findAccessToken = (hash, now) => (lookups.push("access"), findAccessToken.call(storage, hash, now));
  storage.findRefreshToken = (hash, now) => (lookups.push("refresh"), findRefreshToken.call(storage, hash, now));
  return { storage, lookups };
}

async function webTokens(server: Awaited<ReturnType<typeof fixture>>["server"]): Promise<{ access_token: string; refresh_token: string }> {
  const code = await webCode(server);
  const response = await postToken(server, { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code });
  expect(response.status).toBe(200);
  return response.json();
}

describe("token lookup: the hint says which kind to try first (RFC 7009 §2.1, RFC 7662 §2.1)", () => {
  test.each([
    ["introspect", "/introspect"],
    ["revoke", "/revoke"],
  ])("%s: every kind is found under every hint, and the hinted kind is asked for first", async (_, path) => {
    const clock = new Clock();
    const { storage, lookups } = recordingStore(clock);
    const { server } = await fixture({ storage, clock: clock.read });
    const cases = [
      { kind: "access_token", hint: undefined, expected: ["access"] },
      { kind: "access_token", hint: "access_token", expected: ["access"] },
      { kind: "access_token", hint: "refresh_token", expected: ["refresh", "access"] },
      { kind: "refresh_token", hint: undefined, expected: ["access", "refresh"] },
      { kind: "refresh_token", hint: "access_token", expected: ["access", "refresh"] },
      { kind: "refresh_token", hint: "refresh_token", expected: ["refresh"] },
      { kind: "refresh_token", hint: "something_else", expected: ["access", "refresh"] },
    ] as const;
    for (const { kind, hint, expected } of cases) {
      const tokens = await webTokens(server);
      lookups.length = 0;
      const response = await server.fetch(form(path, { token: tokens[kind], ...(hint === undefined ? {} : { token_type_hint: hint }) }));
      expect(response.status).toBe(200);
      const label = `${kind} with hint ${hint}`;
      expect(lookups, label).toEqual(expected);
      if (path === "/introspect") expect(await response.json(), label).toMatchObject({ active: true });
    }
  });

  test("an unknown token is asked for as both kinds and is inactive", async () => {
    const clock = new Clock();
    const { storage, lookups } = recordingStore(clock);
    const { server } = await fixture({ storage, clock: clock.read });
    const response = await server.fetch(form("/introspect", { token: "no-such-token", token_type_hint: "refresh_token" }));
    expect(await response.json()).toEqual({ active: false });
    expect(lookups).toEqual(["refresh", "access"]);
  });
});
