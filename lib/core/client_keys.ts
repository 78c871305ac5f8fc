/**
 * A client's authentication method and keys, as the one door admits them (RFC 7591 §2
 * `token_endpoint_auth_method`, `jwks`, `jwks_uri`; RFC 7523 §2.2): `private_key_jwt` clients prove themselves
 * with a key, never a secret, and name their public keys inline or by URL. Also the JWK Set's shape in the option
 * table, shared by the config file's clients and trusted issuers.
 *
 * @module
 */
import { JoseError } from "../jose/errors.ts";
import { parseJwks } from "../jose/jwks.ts";
import { isPrivateHost } from "../outbound.ts";
import type { ClientOrigin } from "../storage/types.ts";
import type { OptionSpec, OptionType } from "./option_table.ts";

/** The client-authentication methods a client may be registered with (RFC 7591 §2). */
export type TokenEndpointAuthMethod = "client_secret_basic" | "client_secret_post" | "private_key_jwt" | "none";

/** Largest inline JWK Set, as JSON: a few keys, never a document. */
const MAX_JWKS_JSON = 16 * 1024;

const str = (key: string, doc: string): OptionSpec => ({ key, type: { kind: "string" }, doc });

/** One public JWK (RFC 7517 §4) in the option table; private members are listed so that the check can name them. */
const JWK: OptionType = {
  kind: "object",
  required: ["kty"],
  fields: [
    str("kty", "Key type: EC, OKP or RSA."),
    str("kid", "Key ID; names the key in a token's header."),
    str("alg", "The algorithm the key is for (ES256, ES384, EdDSA, RS256, PS256)."),
    str("use", 'Public key use: "sig".'),
    { key: "key_ops", type: { kind: "list", items: { kind: "string" } }, doc: 'Key operations: ["verify"].' },
    str("crv", "Curve: P-256, P-384 or Ed25519."),
    str("x", "X coordinate (EC), or the public key (OKP)."),
    str("y", "Y coordinate (EC)."),
    str("n", "RSA modulus."),
    str("e", "RSA public exponent."),
    { key: "x5c", type: { kind: "list", items: { kind: "string" } }, doc: "Certificate chain (kept, never used to verify)." },
    str("x5t", "Certificate thumbprint (kept, never used)."),
    str("x5t#S256", "Certificate SHA-256 thumbprint (kept, never used)."),
    ...["d", "p", "q", "dp", "dq", "qi", "k"].map((m) => str(m, "A private key member: refused (publish public keys only).")),
  ],
};

/** The option type of a JWK Set of public keys (RFC 7517 §5), checked by {@link jwksProblem}. */
export const JWK_SET_TYPE: OptionType = {
  kind: "object",
  required: ["keys"],
  fields: [{ key: "keys", type: { kind: "list", items: JWK, minItems: 1 }, doc: "The public keys." }],
};

/** Why a JWK Set cannot verify anything, or undefined when it holds at least one usable public key. */
export function jwksProblem(jwks: unknown): string | undefined {
  try {
    if (JSON.stringify(jwks).length > MAX_JWKS_JSON) return `must be at most ${MAX_JWKS_JSON} bytes of JSON`;
    if (parseJwks(jwks).length === 0) return "holds no public key usable with ES256, ES384, EdDSA, RS256 or PS256";
  } catch (error) {
    if (error instanceof JoseError) return error.message.includes("private") ? "must hold public keys only: a private key member was found" : "is not a JWK Set";
    throw error;
  }
  return undefined;
}

/** Why a `jwks_uri` is refused, or undefined. An operator's URL may be http on any host; a stranger's may not. */
export function jwksUriProblem(uri: unknown, fenced: boolean): string | undefined {
  if (typeof uri !== "string" || uri.length > 2000 || !URL.canParse(uri)) return "must be an absolute URL";
  const url = new URL(uri);
  if (url.username !== "" || url.password !== "" || url.hash !== "") return "must have no userinfo and no fragment";
  if (url.protocol !== "https:" && !(url.protocol === "http:" && !fenced)) return "must be an https URL";
  // A registered client's or a document's key set is fetched on a stranger's word: never from a private host.
  if (fenced && isPrivateHost(url.hostname)) return "must not be on a private host";
  return undefined;
}

/** What the door stores of a client's authentication. */
export interface ClientAuthentication {
  /** The method, when the registration named one. */
  method?: string;
  /** The inline keys of a `private_key_jwt` client. */
  jwks?: unknown;
  /** The keys' URL of a `private_key_jwt` client. */
  jwks_uri?: string;
}

/** What the door knows when it checks a client's authentication. */
export interface AuthenticationContext {
  readonly clientId: string;
  readonly type: "public" | "confidential";
  readonly hasSecret: boolean;
  readonly origin: ClientOrigin | undefined;
  /** A document from an origin the operator listed: its key-set URL may be http, as the document's was. */
  readonly relaxHttp: boolean;
  /** The enabled methods. */
  readonly methods: ReadonlySet<string>;
}

/**
 * Checks a client's method and keys: a method the server offers; `none` for public clients only and a secret
 * method for confidential ones; `private_key_jwt` with exactly one of `jwks` and `jwks_uri` and no secret; keys
 * for no other method. Returns `[field, problem]` for the first refusal, or null.
 */
export function authenticationProblem(auth: ClientAuthentication, context: AuthenticationContext): [string, string] | null {
  const { method, jwks, jwks_uri } = auth;
  const id = context.clientId;
  if (method !== undefined) {
    if (typeof method !== "string" || !context.methods.has(method)) {
      return ["token_endpoint_auth_method", `client "${id}": token_endpoint_auth_method must be one of ${[...context.methods].join(", ")}`];
    }
    if ((method === "none") !== (context.type === "public")) {
      return ["token_endpoint_auth_method", `client "${id}": ${method === "none" ? "a confidential client must prove itself, not use none" : `a public client cannot use ${method}`}`];
    }
  }
  const keyed = method === "private_key_jwt";
  if (!keyed) {
    if (jwks !== undefined || jwks_uri !== undefined) return [jwks === undefined ? "jwks_uri" : "jwks", `client "${id}": keys are for token_endpoint_auth_method "private_key_jwt"`];
    return null;
  }
  // RFC 7523 §2.2: the key is the proof; a secret beside it would be a second, weaker way in.
  if (context.hasSecret) return ["client_secret", `client "${id}" uses private_key_jwt: it has no secret`];
  if ((jwks === undefined) === (jwks_uri === undefined)) return ["jwks", `client "${id}" uses private_key_jwt: give exactly one of jwks and jwks_uri`];
  if (jwks !== undefined) {
    const problem = jwksProblem(jwks);
    return problem === undefined ? null : ["jwks", `the jwks of client "${id}" ${problem}`];
  }
  const fenced = (context.origin === "registration" || context.origin === "document") && !context.relaxHttp;
  const problem = jwksUriProblem(jwks_uri, fenced);
  return problem === undefined ? null : ["jwks_uri", `the jwks_uri of client "${id}" ${problem}`];
}
