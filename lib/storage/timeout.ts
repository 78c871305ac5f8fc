/**
 * A deadline on every storage call, so that a hung store cannot hang requests.
 *
 * One timer serves every call in flight ({@link DeadlineQueue}), not one timer per call.
 *
 * @module
 */
import { DeadlineQueue } from "../deadline.ts";
import { OAuthError } from "../errors.ts";
import { STORAGE_METHODS, type Storage } from "./types.ts";

/** Wraps a store so that each call fails with 503 `temporarily_unavailable` after `ms` milliseconds. */
export function withTimeout(storage: Storage, ms: number): Storage {
  const deadlines = new DeadlineQueue(ms, (name) =>
    new OAuthError("temporarily_unavailable", {
      description: "The service is temporarily unavailable",
      headers: { "retry-after": "1" },
      cause: new Error(`Storage call "${name}" took longer than ${ms} ms`),
    }));
  const wrapped = {} as Record<string, unknown>;
  const target = storage as unknown as Record<string, unknown>;
  for (const name of STORAGE_METHODS) {
    // Looked up per call, so a store whose methods are replaced later (instrumented, patched) stays honest.
    wrapped[name] = (...args: unknown[]) =>
      deadlines.watch((target[name] as (...a: unknown[]) => unknown).apply(storage, args), name);
  }
  return wrapped as unknown as Storage;
}
