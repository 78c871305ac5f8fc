/**
 * The check shared by the two secret methods: the presented secret's SHA-256 against the stored hash, in
 * constant time.
 *
 * @module
 */
import type { PresentedCredentials } from "../core/client_auth.ts";
import { timingSafeEqual } from "../crypto.ts";
import { sha256 } from "../sha256.ts";
import type { ClientRecord } from "../storage/types.ts";

/** Whether a presented secret proves a confidential client; an unknown client costs the same hash. */
export function verifySecret(presented: PresentedCredentials, client: ClientRecord | null): boolean {
  const hash = sha256(presented.material ?? "");
  if (client === null || client.type !== "confidential" || client.secret_hash === undefined) return false;
  return timingSafeEqual(hash, client.secret_hash);
}
