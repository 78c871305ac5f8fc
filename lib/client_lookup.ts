/**
 * Finding the client of an authorization request: in the store, or, for a client identifier URL, through its
 * metadata document, which is then written to the store so the token endpoint and every other instance find
 * the same record.
 *
 * @module
 */
import type { ServerContext } from "./options.ts";
import type { ClientRecord } from "./storage/types.ts";

/** The client, or null when there is none. Throws `OAuthError` when a metadata document is refused. */
export async function findClient(clientId: string, context: ServerContext): Promise<ClientRecord | null> {
  const { documents, storage } = context;
  if (documents === null || !documents.handles(clientId)) return storage.getClient(clientId);
  const stored = await storage.getClient(clientId);
  // A client registered any other way is never replaced by a document at its address; one an administrator
  // paused stays paused, whatever its document says.
  if (stored && (stored.origin !== "document" || !stored.active)) return stored;
  const { client, fresh } = await documents.resolve(clientId, context);
  if (fresh || stored === null) {
    const record: ClientRecord = { ...client, created_at: stored?.created_at ?? client.created_at };
    if (stored?.last_used_at !== undefined) record.last_used_at = stored.last_used_at;
    if (stored?.introspection !== undefined) record.introspection = stored.introspection;
    await storage.saveClient(record);
  }
  return client;
}
