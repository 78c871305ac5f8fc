/**
 * A deadline on every storage call, so that a hung store cannot hang requests.
 *
 * @module
 */
import { OAuthError } from "../errors.ts";
import type { Storage } from "./types.ts";

/** Wraps a store so that each call fails with 503 `temporarily_unavailable` after `ms` milliseconds. */
export function withTimeout(storage: Storage, ms: number): Storage {
  const wrapped = {} as Record<string, unknown>;
  const target = storage as unknown as Record<string, unknown>;
  for (const name of STORAGE_METHODS) {
    // Looked up per call, so a store whose methods are replaced later (instrumented, patched) stays honest.
    wrapped[name] = (...args: unknown[]) =>
      deadline((target[name] as (...a: unknown[]) => Promise<unknown>).apply(storage, args), ms, name);
  }
  return wrapped as unknown as Storage;
}

const STORAGE_METHODS: readonly (keyof Storage)[] = [
  "getClient", "saveClient", "setClientActive", "saveCode", "findCode", "redeemCode", "saveTokens",
  "findAccessToken", "findRefreshToken", "rotateRefreshToken", "revokeGrant", "revokeAccessToken",
];

function deadline<T>(promise: Promise<T>, ms: number, name: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new OAuthError("temporarily_unavailable", {
        description: "The service is temporarily unavailable",
        headers: { "retry-after": "1" },
        cause: new Error(`Storage call "${name}" took longer than ${ms} ms`),
      }));
    }, ms);
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
