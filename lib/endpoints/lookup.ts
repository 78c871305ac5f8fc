/**
 * Finding a presented token of either kind, for revocation and introspection.
 *
 * @module
 */
import type { AccessTokenRecord, RefreshTokenRecord, Storage } from "../storage/types.ts";

/** A token found by hash, with its kind. */
export type FoundToken =
  | { kind: "access_token"; record: AccessTokenRecord }
  | { kind: "refresh_token"; record: RefreshTokenRecord };

type Finder = (hash: string, now: number, storage: Storage) => Promise<FoundToken | null>;

const findAccess: Finder = async (hash, now, storage) => {
  const record = await storage.findAccessToken(hash, now);
  return record ? { kind: "access_token", record } : null;
};
const findRefresh: Finder = async (hash, now, storage) => {
  const record = await storage.findRefreshToken(hash, now);
  return record ? { kind: "refresh_token", record } : null;
};

/** Looks a token hash up as both kinds; the hint only says which to try first (RFC 7009 §2.1, RFC 7662 §2.1). */
export async function findToken(hash: string, hint: string | undefined, storage: Storage, now: number): Promise<FoundToken | null> {
  for (const find of hint === "refresh_token" ? [findRefresh, findAccess] : [findAccess, findRefresh]) {
    const found = await find(hash, now, storage);
    if (found) return found;
  }
  return null;
}
