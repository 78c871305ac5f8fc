// Private keys at rest: AES-GCM under an HKDF key from the server's secret. Only the same secret, and the same
// kid, open a sealed key; the sealer's id names the secret without revealing it.
import { describe, expect, test } from "vitest";
import { sealerOf } from "../../lib/keys/sealing.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const A = bytes("secret-a-0123456789abcdef-0123456789");
const B = bytes("secret-b-0123456789abcdef-0123456789");

describe("sealing", () => {
  test("a sealed key opens with the same secret and kid, and with nothing else", async () => {
    const a = await sealerOf(A);
    const sealed = await a.seal('{"d":"private"}', "kid-1");
    expect(sealed).not.toContain("private");
    expect(await (await sealerOf(A)).open(sealed, "kid-1")).toBe('{"d":"private"}');
    await expect(a.open(sealed, "kid-2")).rejects.toThrow(/sealed under another secret, or changed/);
    await expect((await sealerOf(B)).open(sealed, "kid-1")).rejects.toThrow(/sealed under another secret, or changed/);
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.at(-1);
    await expect(a.open(flipped, "kid-1")).rejects.toThrow();
  });

  test("every seal uses a fresh IV; the id depends on the secret alone and reveals nothing of it", async () => {
    const a = await sealerOf(A);
    expect(await a.seal("x", "k")).not.toBe(await a.seal("x", "k"));
    expect((await sealerOf(A)).id).toBe(a.id);
    expect((await sealerOf(B)).id).not.toBe(a.id);
    expect(a.id).toMatch(/^[\w-]{22}$/);
  });
});
