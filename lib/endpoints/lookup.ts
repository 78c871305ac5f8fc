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

/** Looks a token hash up as both kinds; the hint only says which to try first (RFC 7009 §2.1, RFC 7662 §2.1). */
export async function findToken(hash: string, hint: string | undefined, context: ServerContext): Promise<FoundToken | null> {
  const now = context.clock();
  const order = hint === "refresh_token" ? ["refresh_token", "access_token"] : ["access_token", "refresh_token"];
  for (const kind of order) {
    if (kind === "access_token") {
      const record = await context.storage.findAccessToken(hash, now);
      if (record) return { kind, record };
    } else {
      const record = await context.storage.findRefreshToken(hash, now);
      if (record) return { kind: "refresh_token", record };
    }
  }
  return null;
}
