/**
 * The token response's JSON is written out by hand on the hot path (`tokenResponseJson`); it must be the very
 * text `JSON.stringify` gives, member order included, for every response, and fall back to it for anything
 * unexpected.
 */
import fc from "fast-check";
import { expect, test } from "vitest";
import { type TokenResponse, tokenResponseJson } from "../lib/tokens.ts";

const b64url = fc.string({ unit: fc.constantFrom(..."ABCxyz019-_"), minLength: 1, maxLength: 64 });
const anyString = fc.string({ unit: "binary", maxLength: 40 });

test("tokenResponseJson is JSON.stringify, for well-formed and odd responses alike", () => {
  const responses = fc.record({
    access_token: fc.oneof(b64url, anyString),
    token_type: fc.constant("Bearer" as const),
    expires_in: fc.oneof(fc.integer(), fc.double()),
    scope: anyString,
  }).chain((r) => fc.option(fc.oneof(b64url, anyString), { nil: undefined }).map((refresh) => {
    const response: TokenResponse = { ...r };
    if (refresh !== undefined) response.refresh_token = refresh;
    return response;
  }));
  fc.assert(fc.property(responses, (response) => tokenResponseJson(response) === JSON.stringify(response)), { numRuns: 5_000 });
});

test("an unexpected member is not dropped", () => {
  const response = { access_token: "abc", token_type: "Bearer", expires_in: 1, scope: "read", extra: 1 } as TokenResponse;
  expect(JSON.parse(tokenResponseJson(response))).toHaveProperty("extra", 1);
});
