/**
 * `oauth2-fetch-server keys list|rotate`: the signing keys of JWT access tokens in the store a config file or a
 * store URL names, while servers run on it. A rotation seals the new key under the servers' secret, so it needs
 * the same one (the config's `secret`, `OAUTH2_FETCH_SERVER_SECRET`, or the key file beside the config file).
 *
 * @module
 */
import type { SigningKeyInfo } from "../keys/keyring.ts";
import type { AdminRunner } from "./clients.ts";

const when = (iso: string | undefined) => (iso === undefined ? "-" : iso.replace(/\.\d{3}Z$/, "Z"));

function table(keys: readonly SigningKeyInfo[]): string[] {
  const rows = [["KID", "ALG", "STATE", "SIGNS_FROM", "RETIRES_AT"]];
  for (const k of keys) rows.push([k.kid, k.alg, k.state, when(k.signs_from), when(k.retires_at)]);
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join("  ").trimEnd());
}

/** The key commands, by name as in `COMMANDS` (args.ts). */
export const KEY_RUNNERS: Record<string, AdminRunner> = {
  async "keys list"(flags, _, { keys, description, print }) {
    const listed = await (await keys(false)).list();
    if (flags["--json"]) return print(JSON.stringify(listed)), 0;
    if (listed.length === 0) return print(`${description}: no signing keys yet (a server makes the first when it starts with signing_keys or access_token_format)`), 0;
    for (const line of table(listed)) print(line);
    return 0;
  },

  async "keys rotate"(flags, _, { keys, print }) {
    const { rotated, keys: after } = await (await keys(true)).rotate();
    if (flags["--json"]) return print(JSON.stringify({ rotated, keys: after })), 0;
    const next = after.find((k) => k.state === "next");
    const current = after.find((k) => k.state === "current");
    if (!rotated) {
      print(next ? `a rotation is already under way: key ${next.kid} signs from ${when(next.signs_from)}` : "another instance made the first key");
    } else if (next !== undefined) {
      print(`published key ${next.kid} (${next.alg}) at /jwks: it signs from ${when(next.signs_from)}`);
      if (current) print(`key ${current.kid} signs until then and stays at /jwks until ${when(current.retires_at)}`);
    } else {
      print(`made the first key ${current?.kid ?? "?"} (${current?.alg ?? "?"}): it signs now`);
    }
    return 0;
  },
};
