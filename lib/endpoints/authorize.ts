/**
 * The authorization endpoint (RFC 6749 §4.1.1-4.1.2.1, RFC 7636 §4.3, RFC 9207; spec §4.1).
 *
 * Order matters: client_id and redirect_uri are checked first, and while either is in doubt every error is an
 * HTML page, never a redirect (RFC 6749 §4.1.2.1, RFC 9700 §4.1). Only then do errors go back to the client.
 *
 * @module
 */
import { consentPage } from "../consent/pages.ts";
import { clientStanding } from "../consent/standing.ts";
import { CSRF_TTL, csrfToken, verifyCsrfToken } from "../consent/csrf.ts";
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";
import type { Exchange } from "../core/exchange.ts";
import type { EndUser } from "../core/hooks.ts";
import { authorizationRedirect } from "../core/render.ts";
import type { View } from "../core/view.ts";
import { randomToken } from "../crypto.ts";
import { OAuthError } from "../errors.ts";
import { clientMetadataDocumentsFeature, findClient } from "../features/client_metadata_documents.ts";
import { dpop } from "../features/dpop.ts";
import { offlineAccess } from "../features/offline_access.ts";
import { profile } from "../features/profile.ts";
import { requestedResource, resourceIndicators } from "../features/resource_indicators.ts";
import { printable, queryOf, readParams, type ResponseParts } from "../http.ts";
import { CODE_CHALLENGE } from "../pkce.ts";
import { parsePrompt, type PromptValue } from "../prompt.ts";
import { redirectUriMatches } from "../redirect_uri.ts";
import { OFFLINE_ACCESS, requestedScope } from "../scope.ts";
import { sha256 } from "../sha256.ts";
import type { ClientRecord } from "../storage/types.ts";
import { newGrantId } from "../tokens.ts";

/** Unredeemed codes kept per user and client; a client that needs more in flight is misbehaving. */
const OUTSTANDING_CODES = 5;

/** A validated authorization request. */
interface AuthorizationRequest {
  client: ClientRecord;
  redirect_uri: string;
  scope: string;
  state: string | undefined;
  code_challenge: string | undefined;
  /** RFC 8707 audience the user consents to. */
  resource: string[] | undefined;
  /** OpenID Connect Core §3.1.2.1 `prompt` values. */
  prompt: readonly PromptValue[];
  /** RFC 9449 §10: the thumbprint of the DPoP key the code is bound to. */
  dpop_jkt: string | undefined;
}

/** A JWK SHA-256 thumbprint (RFC 7638), as `dpop_jkt` carries it: 43 base64url characters. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

const READS = ["clock", "storage", "scopes", "defaultScope", "authenticateUser", "csrfKey", "codeTtl", "issuer", "admission", "formLimits"] as const;
const USES = [profile, resourceIndicators, clientMetadataDocumentsFeature, offlineAccess, dpop] as const;
type AuthorizeView = View<(typeof READS)[number], typeof USES>;

/** The authorization endpoint: GET shows login or consent; the login and consent forms POST back here. */
export const authorizeEndpoint: Endpoint = defineEndpoint({
  name: "authorize",
  route: "/authorize",
  page: true,
  cors: false,
  when: (core) => core.authenticateUser !== undefined,
  reads: READS,
  uses: USES,
  methods: { GET: authorize, POST: authorize },
});

async function authorize(exchange: Exchange, context: AuthorizeView): Promise<ResponseParts | Response> {
  const { request } = exchange;
  const authorization = await validateRequest(exchange, context);
  const { client, redirect_uri, scope, state } = authorization;
  const redirectOnError = { uri: redirect_uri, state };

  const form = request.method === "POST" ? await exchange.form() : null;
  const user = await context.authenticateUser!(request, {
    form: form ? new URLSearchParams([...form]) : null,
    client: { client_id: client.client_id, name: client.name },
    scope,
    prompt: authorization.prompt,
    remoteAddress: exchange.address,
    issuer: context.issuer,
    audit: (event) => exchange.emit({ client_id: client.client_id, ...event }),
  });
  if (authorization.prompt.includes("none")) {
    // OpenID Connect Core §3.1.2.1: no page at all. Consent is never remembered here, so a signed-in user
    // would still have to consent.
    if (user instanceof Response) {
      await user.body?.cancel();
      throw new OAuthError("login_required", { description: "The user is not signed in", redirect: redirectOnError });
    }
    throw new OAuthError("consent_required", { description: "The user has to approve this request", redirect: redirectOnError });
  }
  if (user instanceof Response) return user; // the hook's own page: a login form, a redirect to an IdP
  if (typeof user !== "object" || user === null || typeof user.id !== "string" || user.id === "") {
    throw new OAuthError("server_error", { description: "The user could not be identified", cause: user });
  }

  const key = await context.csrfKey();
  // Every parameter of the request; null for an absent one, which no string value can imitate.
  const bound = [
    user.id, client.client_id, redirect_uri, scope, authorization.code_challenge ?? null, state ?? null,
    authorization.resource ?? null, authorization.dpop_jkt ?? null,
  ];
  const now = context.clock();
  const decision = form?.get("decision");
  if (decision === undefined) {
    return consentPage({
      clientName: client.name,
      clientId: client.client_id,
      userName: user.name ?? user.id,
      scopes: scope.split(" ").map((name) => ({ name, description: describeScope(name, context) })),
      action: exchange.target,
      csrf: await csrfToken(key, bound, now),
      redirectOrigin: redirect_uri,
      // Stryker disable next-line ConditionalExpression: undefined renders as no list (equivalent)
      ...(authorization.resource === undefined ? {} : { resources: authorization.resource }),
      // A self-registered client's name proves nothing: marked unverified, with where its id lives and where
      // the answer goes.
      ...clientStanding(client, redirect_uri, context.admission),
    });
  }
  const csrf = form!.get("csrf");
  if (!(await verifyCsrfToken(key, csrf, bound, now))) {
    // No redirect: a forged or stale form must have no effect on the client at all.
    throw new OAuthError("access_denied", {
      description: "The consent form has expired or did not come from this site. Please start again.",
    });
  }
  if (decision !== "deny" && decision !== "allow") {
    throw new OAuthError("invalid_request", { description: "Unknown consent decision", redirect: redirectOnError });
  }
  // One approval, one answer (finding 2 of issue 15): a replayed consent POST must not mint another code.
  if (!(await context.storage.markOnce(`consent:${sha256(csrf!)}`, now + CSRF_TTL, now))) {
    throw new OAuthError("access_denied", {
      description: "This consent form was already used. Please start again.",
    });
  }
  const who = { client_id: client.client_id, user_id: user.id };
  if (decision === "deny") {
    exchange.emit({ type: "consent.denied", ...who });
    throw new OAuthError("access_denied", { description: "The user denied the request", redirect: redirectOnError });
  }
  exchange.emit({ type: "consent.granted", ...who });
  const { code, grantId } = await issueCode(authorization, user, context, now);
  exchange.emit({ type: "code.issued", ...who, grant_id: grantId });
  return redirectTo(authorizationRedirect(redirect_uri, { code, state }, context.issuer));
}

/** A scope's line on the consent page: its description, the feature's for offline_access, else its name. */
function describeScope(name: string, context: AuthorizeView): string {
  const offline = context.features.offline_access;
  return context.scopes.get(name) ?? (name === OFFLINE_ACCESS && offline !== null ? offline.description : name);
}

function redirectTo(location: string): ResponseParts {
  // 303: after the consent POST the browser must GET the client's redirect URI (RFC 9700 §4.12).
  return { status: 303, headers: [["location", location], ["cache-control", "no-store"]], body: null };
}

async function issueCode(
  authorization: AuthorizationRequest,
  user: EndUser,
  context: AuthorizeView,
  now: number,
): Promise<{ code: string; grantId: string }> {
  const code = randomToken();
  const grantId = newGrantId();
  // At most OUTSTANDING_CODES unredeemed codes per user and client: the store drops the oldest.
  await context.storage.saveCode({
    hash: sha256(code),
    grant_id: grantId,
    client_id: authorization.client.client_id,
    user_id: user.id,
    redirect_uri: authorization.redirect_uri,
    scope: authorization.scope,
    // Stryker disable next-line ConditionalExpression: undefined reads as no challenge (equivalent)
    ...(authorization.code_challenge === undefined ? {} : { code_challenge: authorization.code_challenge }),
    // Stryker disable next-line ConditionalExpression: undefined reads as no resource (equivalent)
    ...(authorization.resource === undefined ? {} : { resource: authorization.resource }),
    ...(authorization.dpop_jkt === undefined ? {} : { dpop_jkt: authorization.dpop_jkt }),
    ...(user.auth_time === undefined ? {} : { auth_time: user.auth_time }),
    expires_at: now + context.codeTtl,
  }, OUTSTANDING_CODES);
  return { code, grantId };
}

/** Validates the query of an authorization request; throws an error page or an error redirect. */
async function validateRequest(exchange: Exchange, context: AuthorizeView): Promise<AuthorizationRequest> {
  const { target } = exchange;
  const { params, repeated } = readParams(queryOf(target), context.formLimits);
  const page = (description: string) => new OAuthError("invalid_request", { description });

  // Step 1: who is asking, and where would an answer go? Until both are known, never redirect.
  // Stryker disable next-line ConditionalExpression: the scan finds no repeat (equivalent)
  if (repeated !== undefined) {
    // readParams names only the first repeated parameter; client_id or redirect_uri may be a later one.
    const all = new URLSearchParams(queryOf(target));
    for (const name of ["client_id", "redirect_uri"]) {
      if (all.getAll(name).length > 1) throw page(`The ${name} parameter is repeated`);
    }
  }
  const clientId = params.get("client_id");
  if (clientId === undefined) throw page("The client_id parameter is missing");
  const client = await findClient(clientId, context.features.client_metadata_documents, context, exchange);
  if (!client || !client.active) throw page("The application asking for access is not registered or is paused");
  const redirectUri = params.get("redirect_uri");
  if (redirectUri === undefined) throw page("The redirect_uri parameter is missing");
  // Exact string comparison (RFC 9700 §4.1.3), any port on loopback (RFC 8252 §7.3): no prefix or pattern.
  if (!redirectUriMatches(client.redirect_uris, redirectUri)) throw page("The redirect_uri is not registered for this application");

  // Step 2: the redirect target is trusted; errors now go back to the client.
  const state = params.get("state");
  const redirect = { uri: redirectUri, state };
  const fail = (code: "invalid_request" | "unsupported_response_type" | "invalid_scope" | "unauthorized_client" | "invalid_target", description: string) =>
    new OAuthError(code, { description, redirect });

  if (repeated !== undefined) throw fail("invalid_request", `The ${printable(repeated)} parameter is repeated`);
  const responseType = params.get("response_type");
  if (responseType === undefined) throw fail("invalid_request", "The response_type parameter is missing");
  if (responseType !== "code") throw fail("unsupported_response_type", "Only response_type=code is supported");
  if (!client.grant_types.includes("authorization_code")) {
    throw fail("unauthorized_client", "The client may not use the authorization code grant");
  }
  let prompt: readonly PromptValue[];
  try {
    prompt = parsePrompt(params.get("prompt"));
  } catch (error) {
    throw fail("invalid_request", (error as OAuthError).description ?? "Invalid prompt");
  }
  let scope: string;
  try {
    scope = requestedScope(params.get("scope"), client, {
      policy: context.features.profile.scopePolicy,
      known: context.scopes,
      offlineAccess: context.features.offline_access !== null,
    });
  } catch (error) {
    throw fail("invalid_scope", (error as OAuthError).description ?? "Invalid scope");
  }

  let resource: string[] | undefined;
  try {
    resource = requestedResource(params.get("resource"), context.features.resource_indicators);
  } catch (error) {
    throw fail("invalid_target", (error as OAuthError).description ?? "Invalid resource");
  }

  const challenge = params.get("code_challenge");
  const method = params.get("code_challenge_method");
  if (challenge === undefined) {
    if (client.type === "public") throw fail("invalid_request", "Public clients must send code_challenge (PKCE)");
    if (method !== undefined) throw fail("invalid_request", "code_challenge_method was sent without code_challenge");
  } else {
    if (method !== "S256") throw fail("invalid_request", "code_challenge_method must be S256");
    if (!CODE_CHALLENGE.test(challenge)) throw fail("invalid_request", "The code_challenge is malformed");
  }
  // RFC 9449 §10: ignored where DPoP is off, as by any server that does not know it.
  const dpopJkt = context.features.dpop.enabled ? params.get("dpop_jkt") : undefined;
  if (dpopJkt !== undefined && !THUMBPRINT.test(dpopJkt)) throw fail("invalid_request", "The dpop_jkt is not a JWK SHA-256 thumbprint");
  return { client, redirect_uri: redirectUri, scope, state, code_challenge: challenge, resource, prompt, dpop_jkt: dpopJkt };
}
