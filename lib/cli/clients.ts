/**
 * `oauth2-fetch-server clients …`, `migrate` and `purge`: administration of the store a config file or a store
 * URL names, while servers run on it. A new or rotated secret is printed once; only its SHA-256 is stored.
 *
 * @module
 */
import type { ClientRegistry } from "../clients.ts";
import type { ClientRecord, Storage } from "../storage/types.ts";
import { UsageError } from "./args.ts";
import { terminalJson as json, terminalSafe as safe } from "./terminal.ts";

/** An open store, and the client registry of the configured server on it. */
export interface AdminContext {
  storage: Storage;
  /** The store, described without its password. */
  description: string;
  /**
   * The client registry with the configured server's rules (the one door for clients). Without a config file,
   * the server knows no scopes, so `scopes` (the ones asked for) are declared for it.
   */
  registry(scopes: readonly string[]): ClientRegistry;
  /** Prints one line (or one JSON document) on standard output. */
  print(text: string): void;
  clock(): number;
}

type Flags = Record<string, string | string[] | true>;
/** An administration command: resolves with its exit code. */
export type AdminRunner = (flags: Flags, operand: string | undefined, context: AdminContext) => Promise<number>;

const list = (flags: Flags, name: string): string[] => (flags[name] as string[] | undefined) ?? [];

/** What is shown of a client: the record without its secret hash. */
function shown(client: ClientRecord): Omit<ClientRecord, "secret_hash"> {
  const { secret_hash: _, ...rest } = client;
  return rest;
}

const when = (ms: number | undefined) => (ms === undefined ? "never" : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z"));

async function mustGet(storage: Storage, clientId: string): Promise<ClientRecord> {
  const client = await storage.getClient(clientId);
  if (!client) throw new Error(`no client "${safe(clientId)}" in the store`);
  return client;
}

/** The administration commands, by name as in `COMMANDS` (args.ts). */
export const ADMIN_RUNNERS: Record<string, AdminRunner> = {
  async "clients add"(flags, _, { storage, description, registry, print }) {
    const name = flags["--name"] as string | undefined;
    if (name === undefined) throw new UsageError("clients add needs --name");
    const requested = list(flags, "--scope");
    if (requested.length === 0) throw new UsageError("clients add needs at least one --scope");
    const redirectUris = list(flags, "--redirect-uri");
    const isPublic = flags["--public"] === true;
    const grantTypes = list(flags, "--grant-type");
    const clientId = flags["--client-id"] as string | undefined;
    if (clientId !== undefined && (await storage.getClient(clientId))) {
      throw new Error(`client "${safe(clientId)}" already exists: use "clients rotate-secret" or "clients delete" first`);
    }
    // The configured server's rules (redirect URIs, grant types, scopes, secrets), through its one door.
    const registered = await registry(requested).register({
      ...(clientId === undefined ? {} : { client_id: clientId }),
      name,
      type: isPublic ? "public" : "confidential",
      redirect_uris: redirectUris,
      scopes: requested,
      ...(grantTypes.length > 0 ? { grant_types: grantTypes } : {}),
    }, { origin: "cli" });
    const { client } = registered;
    if (flags["--json"]) {
      print(json({ client: shown(client), ...(registered.client_secret ? { client_secret: registered.client_secret } : {}) }));
    } else {
      print(`added client "${safe(client.client_id)}" (${client.type}) to ${description}`);
      print(`client_id:     ${safe(client.client_id)}`);
      if (registered.client_secret) print(`client_secret: ${registered.client_secret}\n(shown once: only its hash is stored)`);
    }
    return 0;
  },

  async "clients list"(flags, _, { storage, print }) {
    const clients = (await storage.listClients()).sort((a, b) => a.client_id.localeCompare(b.client_id));
    if (flags["--json"]) return print(json(clients.map(shown))), 0;
    const rows = [["CLIENT_ID", "NAME", "TYPE", "STATUS", "ORIGIN", "LAST_USED"]];
    for (const c of clients) {
      rows.push([safe(c.client_id), safe(c.name), c.type, c.active ? "active" : "paused", c.origin ?? "-", when(c.last_used_at)]);
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    for (const row of rows) print(row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
    return 0;
  },

  async "clients show"(flags, id, { storage, print }) {
    const client = await mustGet(storage, id!);
    if (flags["--json"]) return print(json(shown(client))), 0;
    const fields: [string, string][] = [
      ["client_id", client.client_id],
      ["name", client.name],
      ["type", client.type],
      ["status", client.active ? "active" : "paused"],
      ["redirect_uris", client.redirect_uris.join(" ") || "-"],
      ["scopes", client.scopes.join(" ")],
      ["grant_types", client.grant_types.join(" ")],
      ["origin", client.origin ?? "-"],
      ["created_at", when(client.created_at)],
      ["last_used_at", when(client.last_used_at)],
    ];
    for (const [key, value] of fields) print(`${`${key}:`.padEnd(15)}${safe(value)}`);
    return 0;
  },

  async "clients rotate-secret"(flags, id, { storage, registry, print }) {
    const client = await mustGet(storage, id!);
    const { client_secret: secret } = await registry(client.scopes).rotateSecret(client.client_id);
    if (flags["--json"]) print(json({ client_id: client.client_id, client_secret: secret }));
    else print(`client_secret: ${secret}\n(shown once: the old secret no longer works)`);
    return 0;
  },

  async "clients pause"(flags, id, { storage, print }) {
    const client = await storage.setClientActive(id!, false);
    if (!client) throw new Error(`no client "${safe(id!)}" in the store`);
    print(flags["--json"] ? json(shown(client)) : `paused client "${safe(id!)}": it cannot authenticate and its tokens stop working`);
    return 0;
  },

  async "clients resume"(flags, id, { storage, print }) {
    const client = await storage.setClientActive(id!, true);
    if (!client) throw new Error(`no client "${safe(id!)}" in the store`);
    print(flags["--json"] ? json(shown(client)) : `resumed client "${safe(id!)}"`);
    return 0;
  },

  async "clients delete"(flags, id, { storage, print }) {
    if (!(await storage.deleteClient(id!))) throw new Error(`no client "${safe(id!)}" in the store`);
    print(flags["--json"] ? json({ client_id: id, deleted: true }) : `deleted client "${safe(id!)}" and revoked every grant and token issued to it`);
    return 0;
  },

  async "clients revoke-grants"(flags, id, { storage, print }) {
    await mustGet(storage, id!);
    const revoked = await storage.revokeClientGrants(id!);
    print(flags["--json"] ? json({ client_id: id, revoked_grants: revoked }) : `revoked ${revoked} grant(s) of client "${safe(id!)}" and every token issued to it`);
    return 0;
  },

  async migrate(flags, _, { storage, description, print }) {
    // Opening the store applied its migrations; running them again reports what is left (nothing).
    const migrate = (storage as { migrate?: () => Promise<unknown> }).migrate;
    const applied = migrate ? await migrate.call(storage) : undefined;
    print(flags["--json"] ? json({ store: description, migrated: true }) : `${description}: the schema is up to date${typeof applied === "number" && applied > 0 ? ` (${applied} migration(s) applied)` : ""}`);
    return 0;
  },

  async purge(flags, _, { storage, description, print, clock }) {
    const removed = await storage.purgeExpired(clock());
    print(flags["--json"] ? json({ store: description, purged: removed }) : `${description}: purged ${removed} expired record(s)`);
    return 0;
  },
};
