// What the token endpoint hands the store (lib/tokens.ts): records whose absent fields are absent, not set to
// undefined (the Storage types use exactOptionalPropertyTypes, and a store may serialise or enumerate members),
// and grant ids of a fixed size. Mutation testing (issue 15 item 12) found these unheld.
import { expect, test } from "vitest";
import type { AuditEvent } from "../mod.ts";
import type { IssuedTokens } from "../lib/storage/types.ts";
import { tokenResponseJson } from "../lib/tokens.ts";
import { fixture, postToken, SECRETS, spaTokens } from "./helpers.ts";

const undefinedMembers = (record: object) => Object.entries(record).filter(([, value]) => value === undefined).map(([key]) => key);

test("issued records carry no member set to undefined: client_credentials, a code exchange and a refresh", async () => {
  const f = await fixture();
  const handed: IssuedTokens[] = [];
  const { storage } = f;
  const save = storage.saveTokens.bind(storage);
  const redeem = storage.redeemCode.bind(storage);
  const rotate = storage.rotateRefreshToken.bind(storage);
  storage.saveTokens = (tokens, now) => (handed.push(tokens), save(tokens, now));
  storage.redeemCode = (hash, tokens, now) => (handed.push(tokens), redeem(hash, tokens, now));
  storage.rotateRefreshToken = (hash, tokens, now, grace) => (handed.push(tokens), rotate(hash, tokens, now, grace));
  await postToken(f.server, { grant_type: "client_credentials", scope: "export", client_id: "backend", client_secret: SECRETS.backend });
  await postToken(f.server, { grant_type: "client_credentials", scope: "export", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh });
  const { refresh_token } = await spaTokens(f.server);
  expect((await postToken(f.server, { grant_type: "refresh_token", client_id: "spa", refresh_token })).status).toBe(200);
  expect(handed).toHaveLength(4);
  for (const tokens of handed) {
    expect(undefinedMembers(tokens.access)).toEqual([]);
    if (tokens.refresh) expect(undefinedMembers(tokens.refresh)).toEqual([]);
  }
  // And what is absent is absent: a client's own token has no user, no grant and no audience.
  expect(Object.keys(handed[0]!.access).sort()).toEqual(["client_id", "expires_at", "hash", "scope"]);
  expect(handed[0]!.refresh).toBeUndefined();
  expect(Object.keys(handed[1]!.refresh!).sort()).toEqual(["client_id", "expires_at", "grant_id", "hash", "scope"]);
});

test("grant ids are 22 base64url characters", async () => {
  const events: AuditEvent[] = [];
  const { server } = await fixture({ onEvent: (event) => events.push(event) });
  await postToken(server, { grant_type: "client_credentials", scope: "export", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh });
  await spaTokens(server);
  const ids = events.flatMap((e) => (e.grant_id === undefined ? [] : [e.grant_id]));
  expect(ids.length).toBeGreaterThanOrEqual(2);
  for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
});

test.each(['abc"def', "abc\\\\", "abc\ndef", "abc</script>"])("a token that is not base64url (%j) is still written as JSON.stringify writes it", (odd) => {
  const response = { access_token: odd, token_type: "Bearer" as const, expires_in: 60, scope: "read" };
  expect(tokenResponseJson(response)).toBe(JSON.stringify(response));
  expect(tokenResponseJson({ ...response, access_token: "abc", refresh_token: odd })).toBe(JSON.stringify({ ...response, access_token: "abc", refresh_token: odd }));
});
