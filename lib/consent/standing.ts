/**
 * What the consent page says about who a client is: whether an operator stands behind it, and if not, where
 * its identity lives, what kind of application it says it is, and whose name it resembles: a client that calls
 * itself "Hоldout Web" (a Cyrillic о) must not get a consent page that reads like the configured "Holdout Web".
 *
 * @module
 */
import { isLoopbackUri } from "../redirect_uri.ts";
import type { ClientRecord } from "../storage/types.ts";
import type { ConsentPageInput } from "./pages.ts";

/** The consent page's fields about the client's standing. */
export type ClientStanding = Pick<ConsentPageInput, "unverified" | "clientHost" | "applicationType" | "resembles" | "loopbackWarning">;

/**
 * The standing of `client` for a request redirecting to `redirectUri`. `admission.resembles` names the
 * operator's client whose name this one's resembles.
 */
export function clientStanding(
  client: ClientRecord,
  redirectUri: string,
  admission: { resembles(name: string): string | undefined },
): ClientStanding {
  const unverified = client.origin === "document" || client.origin === "registration";
  if (!unverified) return { unverified: false, loopbackWarning: false };
  const standing: ClientStanding = { unverified: true, loopbackWarning: isLoopbackUri(redirectUri) };
  if (client.origin === "document") standing.clientHost = new URL(client.client_id).host;
  const type = client.metadata?.application_type;
  if (type === "web" || type === "native") standing.applicationType = type;
  const resembled = admission.resembles(client.name);
  if (resembled !== undefined) standing.resembles = resembled;
  return standing;
}
