/**
 * Finding a presented token of either kind, for revocation and introspection.
 *
 * @module
 */
import type { ServerContext } from "../options.ts";
import type { AccessTokenRecord, RefreshTokenRecord } from "../storage/types.ts";

/** A token found by hash, with its kind. */
export type FoundToken =
  | { kind: "access_token"; record: AccessTokenRecord }
  | { kind: "refresh_token"; record: RefreshTokenRecord };

type Finder = (hash: string, now: number, context: ServerContext) => Promise<FoundToken | null>;

const findAccess: Finder = async (hash, now, context) => {
  const record = await context.storage.findAccessToken(hash, now);
  return record ? { kind: "access_token", record } : null;
};
const findRefresh: Finder = async (hash, now, context) => {
  const record = await context.storage.findRefreshToken(hash, now);
  return record ? { kind: "refresh_token", record } : null;
};

/** Looks a token hash up as both kinds; the hint only says which to try first (RFC 7009 §2.1, RFC 7662 §2.1). */
export async function findToken(hash: string, hint: string | undefined, context: ServerContext): Promise<FoundToken | null> {
  const now = context.clock();
  for (const find of hint === "refresh_token" ? [findRefresh, findAccess] : [findAccess, findRefresh]) {
    const found = await find(hash, now, context);
    if (found) return found;
  }
  return null;
}
