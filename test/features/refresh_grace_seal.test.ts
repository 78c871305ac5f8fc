// The grace window's sealed successor opens only with the spent refresh token itself, and only to the token the
// record names; anything else (another token, the stored hash, a changed seal) opens nothing.
import { expect, test } from "vitest";
import { randomToken } from "../../lib/crypto.ts";
import { openSuccessor, sealSuccessor } from "../../lib/features/refresh_grace_seal.ts";
import { sha256 } from "../../lib/sha256.ts";

test("a seal opens with the spent token to the successor the record names, and with nothing else", async () => {
  const [spent, successor] = [randomToken(), randomToken()];
  const sealed = await sealSuccessor(spent, successor);
  expect(sealed).not.toContain(successor);
  expect(await openSuccessor(spent, sealed, sha256(successor))).toBe(successor);
  expect(await openSuccessor(randomToken(), sealed, sha256(successor)), "another token").toBeNull();
  expect(await openSuccessor(sha256(spent), sealed, sha256(successor)), "the hash the store holds").toBeNull();
  expect(await openSuccessor(spent, sealed, sha256(randomToken())), "a record naming another successor").toBeNull();
  const flipped = sealed.slice(0, 20) + (sealed[20] === "A" ? "B" : "A") + sealed.slice(21);
  expect(await openSuccessor(spent, flipped, sha256(successor)), "a changed seal").toBeNull();
  expect(await openSuccessor(spent, "not base64url!", sha256(successor))).toBeNull();
  expect(await sealSuccessor(spent, successor), "a fresh IV every time").not.toBe(sealed);
});
