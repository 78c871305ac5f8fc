/**
 * The target description: everything the suite knows about the server under test, read from a JSON file.
 * The suite learns nothing else about the server; see README.md "Target format".
 *
 * @module
 */
import { FEATURES, type FeatureId, isFeature } from "./features.ts";

/** A client the target registered for one role. */
export interface ClientRole {
  /** The client's identifier. */
  client_id: string;
  /** Confidential clients only. */
  client_secret?: string;
  /** Authorization code clients only: the one registered redirect URI. */
  redirect_uri?: string;
  /** The one scope the suite asks for; the client must be allowed it. */
  scope: string;
  /** Another scope the client is allowed, for the "two scopes" and "no widening on refresh" cases. */
  extra_scope?: string;
}

/** A client role with the fields the authorization code flow needs. */
export type CodeClient = ClientRole & { redirect_uri: string };
/** A client role with a secret. */
export type SecretClient = ClientRole & { client_secret: string };

/** The client roles a target names. */
export interface TargetClients {
  /** Public client: authorization_code + refresh_token, PKCE. */
  public: CodeClient;
  /** Confidential client: authorization_code + refresh_token, with a secret. */
  confidential: CodeClient & SecretClient;
  /** Confidential client for client_credentials, NOT configured to receive refresh tokens. */
  client_credentials: SecretClient;
  /** Optional: a client_credentials client configured to receive refresh tokens. */
  client_credentials_refresh?: SecretClient;
  /** A second client for cross-client checks (a secret only if it is confidential). */
  second: { client_id: string; client_secret?: string };
  /** Optional: a client allowed the device_code grant (RFC 8628), public or with its secret; without it those cases skip. */
  device?: ClientRole;
}

/** A name of a role that can obtain an access token. */
export type TokenRole = "public" | "confidential" | "client_credentials";

/** The protected resource used for the Bearer checks. */
export interface ResourceTarget {
  /** A URL on the resource that answers 2xx to a valid Bearer token. */
  url: string;
  /** The role whose token the suite presents. Default "client_credentials". */
  client: TokenRole;
  /** The scope to ask that role for. Default: the role's scope. */
  scope: string;
  /** Optional: a role and scope whose token must NOT be enough (403 insufficient_scope). */
  insufficient?: { client: TokenRole; scope: string };
}

/** What the MCP profile's cases need; every field optional (the cases that need one skip without it). */
export interface McpTarget {
  /** A resource (RFC 8707) the server issues tokens for: the MCP server's canonical URI. */
  resource?: string;
  /** The MCP endpoint guarded by that resource, which answers 401 with `resource_metadata` (RFC 9728 §5.1). */
  protected_url?: string;
  /** The Origin a browser-based client sends, for the CORS cases. Default `https://mcp-client.example`. */
  origin: string;
  /**
   * A tool of the MCP endpoint whose call needs a scope beyond the public client's `scope` (which that client is
   * allowed too), for the step-up case: a `tools/call` of `tool` with a token for `scope`-less access must get 403
   * `insufficient_scope` naming it (MCP 2026-07-28, runtime insufficient scope errors).
   */
  step_up?: { tool: string; scope: string };
}

/**
 * The identity cases' roles (RFC 7523, RFC 8693, the ID-JAG draft): the suite stands in for the client's key
 * pair, an identity provider and a workload platform, and serves their public keys at `origin` (a loopback http
 * origin the server is configured to trust): `{origin}/client/jwks`, and the issuers `{origin}/idp` and
 * `{origin}/workload` with their keys at `{issuer}/jwks`. Every role is optional; its cases skip without it.
 */
export interface IdentityTarget {
  /** Where the suite serves its key sets, e.g. `http://127.0.0.1:47801`. */
  origin: string;
  /** A client registered with `private_key_jwt` and `jwks_uri` `{origin}/client/jwks`, allowed client_credentials. */
  private_key_jwt?: { client_id: string; scope: string };
  /**
   * A confidential client allowed the jwt-bearer grant, for which the server trusts `{origin}/idp` as an ID-JAG
   * issuer, and the email of a user the server links such assertions to.
   */
  id_jag?: { client_id: string; client_secret: string; scope: string; email: string };
  /** A client allowed the jwt-bearer grant, for which the server trusts `{origin}/workload` as a workload platform. */
  workload?: { client_id: string; client_secret?: string; scope: string; subject: string };
  /** A confidential client allowed token exchange, and a scope of the public client's token to exchange. */
  token_exchange?: { client_id: string; client_secret: string; scope: string };
}

/** How the end user's approval is obtained. */
export type ApprovalConfig =
  | { driver: "html_form"; username: string; password: string; deny: boolean }
  | { driver: "module"; module: string; deny: boolean };

/** A checked target, every URL absolute. */
export interface Target {
  /** The name reports show. */
  name: string;
  /** The server's base URL; relative URLs of the file resolve against it. */
  base_url: string;
  /** Expected `iss` of authorization responses (RFC 9207). Default: base_url. */
  issuer: string;
  /** The authorization endpoint (RFC 6749 §3.1). */
  authorize_url: string;
  /** The token endpoint (RFC 6749 §3.2). */
  token_url: string;
  /** Optional: a protected resource, for the Bearer cases (RFC 6750). */
  resource?: ResourceTarget;
  /** The registered clients the cases use, by role. */
  clients: TargetClients;
  /** A scope the server knows but that none of the clients is allowed. */
  forbidden_scope: string;
  /** How the test user signs in and approves. */
  approval: ApprovalConfig;
  /** RFC 8414 metadata. Default: `/.well-known/oauth-authorization-server` + the issuer's path, at its origin. */
  metadata_url: string;
  /** Optional: the RFC 7009 revocation endpoint. Default: the metadata's `revocation_endpoint`. */
  revocation_url?: string;
  /** Optional: an endpoint that moves the server's clock (POST `{"advance_ms": N}`), for the expiry cases. */
  clock_url?: string;
  /** Seconds an authorization code lives; the expiry case waits this long plus a minute. Default 600. */
  code_lifetime_s: number;
  /** The MCP profile's resource, protected endpoint and CORS origin. */
  mcp: McpTarget;
  /**
   * Optional: where the suite may serve Client ID Metadata Documents (an origin the server is configured to
   * fetch from, e.g. `http://127.0.0.1:47801`); without it the CIMD cases skip.
   */
  client_metadata_documents?: { origin: string };
  /** The identity cases' roles and the origin where the suite serves its keys; without it those cases skip. */
  identity?: IdentityTarget;
  /**
   * What the target file says the server offers, feature by feature; it overrides the metadata (see
   * {@link FEATURES}). Empty: discovery alone decides.
   */
  features: Partial<Record<FeatureId, boolean>>;
}

/** Options of {@link parseTarget}. */
export interface ParseTargetOptions {
  /** Replaces the file's base_url (the CLI's `--base-url`, or the address of a server it started). */
  base_url?: string;
  /** Where the file was read from; a relative driver module path is resolved against it. */
  location?: string | URL;
}

/** Thrown for an invalid target file; the message lists every problem found. */
export class TargetError extends Error {
  /** Every problem found, one sentence each. */
  readonly problems: string[];
  /** Lists the problems in the message. */
  constructor(problems: string[]) {
    super(`Invalid target:\n  - ${problems.join("\n  - ")}`);
    this.name = "TargetError";
    this.problems = problems;
  }
}

/** The spec's addresses (§4.1, §4.2), relative to base_url. */
export const DEFAULT_PATHS = {
  authorize_url: "index.php?module=OAuth2&action=authorize",
  token_url: "index.php?module=OAuth2&action=token",
} as const;

/** A scope token (RFC 6749 §3.3). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Checks a parsed target file and fills in defaults. Throws {@link TargetError} naming every bad field.
 *
 * @example
 * ```ts
 * const target = parseTarget(JSON.parse(text), { base_url: "http://127.0.0.1:8080" });
 * ```
 */
export function parseTarget(input: unknown, options: ParseTargetOptions = {}): Target {
  const problems: string[] = [];
  const bad = (path: string, message: string, value?: unknown): undefined => {
    problems.push(`"${path}" ${message}${value === undefined ? "" : `: ${JSON.stringify(value)}`}`);
    return undefined;
  };
  if (!isObj(input)) throw new TargetError(["the target must be a JSON object"]);
  const str = (o: Obj, key: string, path: string, required = true): string | undefined => {
    const v = o[key];
    if (v === undefined && !required) return undefined;
    if (typeof v !== "string" || v === "") return bad(`${path}${key}`, "must be a non-empty string", v);
    return v;
  };
  const baseUrl = options.base_url ?? str(input, "base_url", "");
  let base: string | undefined;
  if (baseUrl !== undefined) {
    if (!isAbsolute(baseUrl)) bad("base_url", "must be an absolute http(s) URL", baseUrl);
    else base = baseUrl.replace(/\/+$/, "");
  }
  // Relative addresses hang below base_url, as the spec's {base_url}/index.php?... does.
  const url = (o: Obj, key: string, path: string, fallback?: string): string | undefined => {
    let v = fallback;
    if (o[key] !== undefined) v = str(o, key, path);
    else if (fallback === undefined) return bad(path + key, "is required");
    if (v === undefined || isAbsolute(v)) return v;
    if (/^[a-z][a-z0-9+.-]*:/i.test(v)) return bad(path + key, "must be an http(s) URL or a path", v);
    return base === undefined ? undefined : `${base}/${v.replace(/^\/+/, "")}`;
  };
  const scope = (o: Obj, key: string, path: string, required = true): string | undefined => {
    const v = str(o, key, path, required);
    if (v !== undefined && !SCOPE_TOKEN.test(v)) bad(path + key, "must be exactly one scope token", v);
    return v;
  };
  const role = (key: string, needs: { secret: boolean; redirect: boolean }, optional = false) => {
    const o = (input.clients as Obj | undefined)?.[key];
    if (o === undefined && optional) return undefined;
    if (!isObj(o)) return bad(`clients.${key}`, "must be an object");
    const p = `clients.${key}.`;
    const r: ClientRole = { client_id: str(o, "client_id", p) ?? "", scope: scope(o, "scope", p) ?? "" };
    const secret = str(o, "client_secret", p, needs.secret);
    if (secret !== undefined) r.client_secret = secret;
    const redirect = str(o, "redirect_uri", p, needs.redirect);
    if (redirect !== undefined) {
      if (!URL.canParse(redirect)) bad(p + "redirect_uri", "must be an absolute URL", redirect);
      r.redirect_uri = redirect;
    }
    const extra = scope(o, "extra_scope", p, false);
    if (extra !== undefined) {
      if (extra === r.scope) bad(p + "extra_scope", "must differ from scope", extra);
      r.extra_scope = extra;
    }
    return r;
  };

  if (!isObj(input.clients)) bad("clients", "must be an object");
  const pub = role("public", { secret: false, redirect: true });
  const conf = role("confidential", { secret: true, redirect: true });
  const cc = role("client_credentials", { secret: true, redirect: false });
  const ccr = role("client_credentials_refresh", { secret: true, redirect: false }, true);
  const device = role("device", { secret: false, redirect: false }, true);
  const second = isObj(input.clients) && isObj(input.clients.second) ? input.clients.second : undefined;
  if (isObj(input.clients) && !second) bad("clients.second", "must be an object");
  const secondId = second ? str(second, "client_id", "clients.second.") : undefined;
  const secondSecret = second ? str(second, "client_secret", "clients.second.", false) : undefined;
  if (pub?.client_secret !== undefined) bad("clients.public.client_secret", "must be absent: the client is public");
  if (secondId !== undefined && [pub, conf].some((r) => r?.client_id === secondId)) {
    bad("clients.second.client_id", "must differ from the public and confidential clients", secondId);
  }

  const forbidden = scope(input, "forbidden_scope", "");
  for (const r of [pub, conf, cc, ccr]) {
    if (r && forbidden !== undefined && (r.scope === forbidden || r.extra_scope === forbidden)) {
      bad("forbidden_scope", `must not be one of client "${r.client_id}"'s scopes`, forbidden);
    }
  }

  const resource = parseResource(input.resource, { url, str, scope, bad }, { pub, conf, cc });
  const approval = parseApproval(input.approval, str, bad, options.location);
  const authorize = url(input, "authorize_url", "", DEFAULT_PATHS.authorize_url);
  const token = url(input, "token_url", "", DEFAULT_PATHS.token_url);
  const issuer = input.issuer === undefined ? base : str(input, "issuer", "");
  if (issuer !== undefined && !isAbsolute(issuer)) bad("issuer", "must be an absolute http(s) URL", issuer);
  const mcp: McpTarget = { origin: "https://mcp-client.example" };
  if (input.mcp !== undefined) {
    if (!isObj(input.mcp)) bad("mcp", "must be an object");
    else {
      // A path means a resource under base_url, for servers started on a port chosen at run time.
      const resource = input.mcp.resource === undefined ? undefined : url(input.mcp, "resource", "mcp.");
      if (resource !== undefined) mcp.resource = resource;
      if (input.mcp.protected_url !== undefined) {
        const protectedUrl = url(input.mcp, "protected_url", "mcp.");
        if (protectedUrl !== undefined) mcp.protected_url = protectedUrl;
      }
      const origin = str(input.mcp, "origin", "mcp.", false);
      if (origin !== undefined) mcp.origin = origin;
      const stepUp = input.mcp.step_up;
      if (stepUp !== undefined) {
        if (!isObj(stepUp)) bad("mcp.step_up", "must be an object with a tool and a scope");
        else {
          const tool = str(stepUp, "tool", "mcp.step_up.");
          const scope = str(stepUp, "scope", "mcp.step_up.");
          if (scope !== undefined && !scope.split(" ").every((t) => SCOPE_TOKEN.test(t))) bad("mcp.step_up.scope", "must be space-delimited scope tokens", scope);
          else if (tool !== undefined && scope !== undefined) mcp.step_up = { tool, scope };
        }
      }
    }
  }
  let documents: { origin: string } | undefined;
  if (input.client_metadata_documents !== undefined) {
    if (!isObj(input.client_metadata_documents)) bad("client_metadata_documents", "must be an object with an origin");
    else {
      const origin = str(input.client_metadata_documents, "origin", "client_metadata_documents.");
      if (origin !== undefined && (!isAbsolute(origin) || new URL(origin).origin !== origin)) {
        bad("client_metadata_documents.origin", 'must be an origin such as "http://127.0.0.1:47801"', origin);
      } else if (origin !== undefined) documents = { origin };
    }
  }
  const identity = parseIdentity(input.identity, { str, scope, bad });
  const features: Partial<Record<FeatureId, boolean>> = {};
  if (input.features !== undefined) {
    if (!isObj(input.features)) bad("features", "must be an object of feature id to true or false");
    else {
      for (const [id, value] of Object.entries(input.features)) {
        if (!isFeature(id)) bad(`features.${id}`, `is not a known feature (${Object.keys(FEATURES).join(", ")})`);
        else if (typeof value !== "boolean") bad(`features.${id}`, "must be true or false", value);
        else features[id] = value;
      }
    }
  }
  const revocation = input.revocation_url === undefined ? undefined : url(input, "revocation_url", "");
  const metadata = input.metadata_url === undefined ? undefined : url(input, "metadata_url", "");
  let clockUrl: string | undefined;
  if (input.clock !== undefined) {
    if (!isObj(input.clock)) bad("clock", "must be an object with a url");
    else clockUrl = url(input.clock, "url", "clock.");
  }
  const lifetime = input.code_lifetime_s ?? 600;
  if (typeof lifetime !== "number" || !Number.isInteger(lifetime) || lifetime <= 0) {
    bad("code_lifetime_s", "must be a positive whole number of seconds", lifetime);
  }

  if (problems.length > 0) throw new TargetError(problems);
  const clients: TargetClients = {
    public: pub as CodeClient,
    confidential: conf as CodeClient & SecretClient,
    client_credentials: cc as SecretClient,
    second: secondSecret === undefined ? { client_id: secondId! } : { client_id: secondId!, client_secret: secondSecret },
  };
  if (ccr) clients.client_credentials_refresh = ccr as SecretClient;
  if (device) clients.device = device;
  const target: Target = {
    name: typeof input.name === "string" ? input.name : base!,
    base_url: base!,
    issuer: issuer!,
    authorize_url: authorize!,
    token_url: token!,
    clients,
    forbidden_scope: forbidden!,
    approval: approval!,
    code_lifetime_s: lifetime as number,
    metadata_url: metadata ?? wellKnown(issuer!),
    mcp,
    features,
    ...(documents === undefined ? {} : { client_metadata_documents: documents }),
    ...(identity === undefined ? {} : { identity }),
  };
  if (revocation !== undefined) target.revocation_url = revocation;
  if (resource) target.resource = resource;
  if (clockUrl !== undefined) target.clock_url = clockUrl;
  return target;
}

/** The `identity` section: an http origin on loopback, and each role's fields. */
function parseIdentity(v: unknown, r: Pick<Readers, "str" | "scope" | "bad">): IdentityTarget | undefined {
  if (v === undefined) return undefined;
  if (!isObj(v)) return r.bad("identity", "must be an object with an origin");
  const origin = r.str(v, "origin", "identity.");
  if (origin !== undefined && (!isAbsolute(origin) || new URL(origin).origin !== origin)) return r.bad("identity.origin", 'must be an origin such as "http://127.0.0.1:47801"', origin);
  const identity: IdentityTarget = { origin: origin ?? "" };
  const section = (key: string): Obj | undefined => {
    const o = v[key];
    if (o === undefined) return undefined;
    if (!isObj(o)) return r.bad(`identity.${key}`, "must be an object");
    return o;
  };
  const role = (key: string, fields: readonly string[], optional: readonly string[] = []) => {
    const o = section(key);
    if (o === undefined) return undefined;
    const out: Record<string, string> = {};
    for (const field of [...fields, ...optional]) {
      const value = field === "scope" ? r.scope(o, field, `identity.${key}.`) : r.str(o, field, `identity.${key}.`, !optional.includes(field));
      if (value !== undefined) out[field] = value;
    }
    return out;
  };
  const pkjwt = role("private_key_jwt", ["client_id", "scope"]);
  if (pkjwt) identity.private_key_jwt = pkjwt as NonNullable<IdentityTarget["private_key_jwt"]>;
  const jag = role("id_jag", ["client_id", "client_secret", "scope", "email"]);
  if (jag) identity.id_jag = jag as NonNullable<IdentityTarget["id_jag"]>;
  const workload = role("workload", ["client_id", "scope", "subject"], ["client_secret"]);
  if (workload) identity.workload = workload as NonNullable<IdentityTarget["workload"]>;
  const exchange = role("token_exchange", ["client_id", "client_secret", "scope"]);
  if (exchange) identity.token_exchange = exchange as NonNullable<IdentityTarget["token_exchange"]>;
  return identity;
}

interface Readers {
  url: (o: Obj, key: string, path: string, fallback?: string) => string | undefined;
  str: (o: Obj, key: string, path: string, required?: boolean) => string | undefined;
  scope: (o: Obj, key: string, path: string, required?: boolean) => string | undefined;
  bad: (path: string, message: string, value?: unknown) => undefined;
}

const TOKEN_ROLES: readonly TokenRole[] = ["public", "confidential", "client_credentials"];

function parseResource(
  v: unknown,
  r: Readers,
  roles: Record<"pub" | "conf" | "cc", ClientRole | undefined>,
): ResourceTarget | undefined {
  if (v === undefined) return undefined;
  if (!isObj(v)) return r.bad("resource", "must be an object");
  const roleOf = (o: Obj, path: string): TokenRole | undefined => {
    const c = o.client ?? "client_credentials";
    if (!TOKEN_ROLES.includes(c as TokenRole)) return r.bad(path, `must be one of ${TOKEN_ROLES.join(", ")}`, c);
    return c as TokenRole;
  };
  const scopeOf = (role: TokenRole | undefined) =>
    role === "public" ? roles.pub?.scope : role === "confidential" ? roles.conf?.scope : roles.cc?.scope;
  const client = roleOf(v, "resource.client");
  const resource: ResourceTarget = {
    url: r.url(v, "url", "resource.") ?? "",
    client: client ?? "client_credentials",
    scope: r.scope(v, "scope", "resource.", false) ?? scopeOf(client) ?? "",
  };
  if (v.insufficient !== undefined) {
    if (!isObj(v.insufficient)) return r.bad("resource.insufficient", "must be an object");
    const c = roleOf(v.insufficient, "resource.insufficient.client") ?? "client_credentials";
    resource.insufficient = { client: c, scope: r.scope(v.insufficient, "scope", "resource.insufficient.") ?? "" };
  }
  return resource;
}

function parseApproval(
  v: unknown,
  str: Readers["str"],
  bad: Readers["bad"],
  location: string | URL | undefined,
): ApprovalConfig | undefined {
  if (!isObj(v)) return bad("approval", "must be an object");
  if (v.deny !== undefined && typeof v.deny !== "boolean") bad("approval.deny", "must be true or false", v.deny);
  const deny = v.deny !== false;
  const driver = v.driver ?? "html_form";
  if (driver === "html_form") {
    const username = str(v, "username", "approval.");
    const password = str(v, "password", "approval.");
    return username && password ? { driver, username, password, deny } : undefined;
  }
  if (driver === "module") {
    const module = str(v, "module", "approval.");
    if (module === undefined) return undefined;
    // Resolved against the target file, so "./driver.ts" means "next to target.json".
    const resolved = location !== undefined && /^\.{1,2}\//.test(module) ? new URL(module, location).href : module;
    return { driver, module: resolved, deny };
  }
  return bad("approval.driver", `must be "html_form" or "module"`, driver);
}

/** RFC 8414 §3: the well-known segment goes between the host and the issuer's path. */
function wellKnown(issuer: string): string {
  const u = new URL(issuer);
  const path = u.pathname === "/" ? "" : u.pathname.replace(/\/+$/, "");
  return `${u.origin}/.well-known/oauth-authorization-server${path}`;
}

function isAbsolute(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === "http:" || u.protocol === "https:";
  } catch {
    return false;
  }
}
