/**
 * The token endpoint against spec §4.2, through `server.fetch` only.
 *
 * Part 1 generates one test per cell of the spec's body-field table (5 grant columns × 8 fields) from the
 * table literal below, which mirrors the spec line by line. A `required` cell: the column's full valid
 * request succeeds, the same request without the field fails with the right error, and the failed try did not
 * spend the code or refresh token. A `not sent` cell: the column's valid request succeeds without the field,
 * and IF_SENT_ANYWAY says (and checks) what happens when a client sends it anyway.
 *
 * Parts 2-3: the rules of §4.2 and §8 (one scope, allowed scopes, PKCE), and the other token-endpoint errors.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import {
  bearer,
  type Fixture,
  fixture,
  getAuthorize,
  codeRequest,
  OTHER_REDIRECT,
  pkce,
  REDIRECT,
  SECRETS,
  spaCode,
  spaTokens,
  webCode,
} from "../helpers.ts";
import {
  expectError,
  expectNoStore,
  expectTokens,
  type Failure,
  failure,
  rawToken,
  s256,
  spaCodeFor,
  token,
  type TokenExpectation,
} from "../token_helpers.ts";

// ---------------------------------------------------------------------------------------------------------------
// The spec's table (spec §4.2 "Body fields by grant"), cell for cell.
// ---------------------------------------------------------------------------------------------------------------

const SPEC_TABLE = [
  ["Field", "authorization_code (public)", "authorization_code (confidential)", "refresh_token (public)", "refresh_token (confidential)", "client_credentials"],
  ["grant_type", "`authorization_code`", "`authorization_code`", "`refresh_token`", "`refresh_token`", "`client_credentials`"],
  ["client_id", "required", "required", "required", "required", "required"],
  ["client_secret", "not sent", "required", "not sent", "required", "required"],
  ["redirect_uri", "required", "required", "not sent", "not sent", "not sent"],
  ["code", "required", "required", "not sent", "not sent", "not sent"],
  ["code_verifier", "required", "not sent", "not sent", "not sent", "not sent"],
  ["refresh_token", "not sent", "not sent", "required", "required", "not sent"],
  ["scope", "not sent", "not sent", "not sent", "not sent", "required (one scope)"],
] as const;

type Column = (typeof SPEC_TABLE)[0][1 | 2 | 3 | 4 | 5];
type Field = (typeof SPEC_TABLE)[1 | 2 | 3 | 4 | 5 | 6 | 7 | 8][0];
const COLUMNS = SPEC_TABLE[0].slice(1) as unknown as readonly Column[];
const ROWS = SPEC_TABLE.slice(1) as unknown as readonly (readonly [Field, ...string[]])[];

/** `required`, `required (one scope)` and a fixed value such as `` `refresh_token` `` must be sent; `not sent` must not. */
function kindOf(cell: string): "required" | "not sent" {
  if (cell === "not sent") return "not sent";
  if (cell.startsWith("required") || /^`[a-z_]+`$/.test(cell)) return "required";
  throw new Error(`unknown cell "${cell}"`);
}

const requiredFields = (column: Column): Field[] =>
  ROWS.filter((row) => kindOf(row[COLUMNS.indexOf(column) + 1]!) === "required").map((row) => row[0]);

// ---------------------------------------------------------------------------------------------------------------
// How each column is exercised: a fresh grant, the values of its required fields, and what a success returns.
// The valid request of a column is exactly its table's `required` fields, picked from `values`.
// ---------------------------------------------------------------------------------------------------------------

interface ColumnSetup {
  /** Starts a fresh grant (a new code or refresh token) and returns a value for every field the column needs. */
  values(f: Fixture): Promise<Partial<Record<Field, string>>>;
  expect: TokenExpectation;
}

/** Exchanges a fresh code of `web` (no PKCE) and returns its refresh token. */
async function webRefreshToken(f: Fixture): Promise<string> {
  const code = await webCode(f.server);
  const response = await token(f.server, {
    grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code,
  });
  const body = await expectTokens(f.server, response, { client_id: "web", scope: "read", refresh: true }, "web code exchange");
  return body.refresh_token!;
}

const COLUMN_SETUP: Record<Column, ColumnSetup> = {
  "authorization_code (public)": {
    async values(f) {
      const { code, verifier } = await spaCode(f.server);
      return { grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier };
    },
    expect: { client_id: "spa", scope: "read", refresh: true },
  },
  "authorization_code (confidential)": {
    async values(f) {
      const code = await webCode(f.server);
      return { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code };
    },
    expect: { client_id: "web", scope: "read", refresh: true },
  },
  "refresh_token (public)": {
    async values(f) {
      const { refresh_token } = await spaTokens(f.server);
      return { grant_type: "refresh_token", client_id: "spa", refresh_token };
    },
    expect: { client_id: "spa", scope: "read", refresh: true },
  },
  "refresh_token (confidential)": {
    async values(f) {
      return { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token: await webRefreshToken(f) };
    },
    expect: { client_id: "web", scope: "read", refresh: true },
  },
  client_credentials: {
    // Spec §2: no refresh token for client_credentials unless configured; `backend` is not (see backend-refresh below).
    values: () => Promise.resolve({ grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" }),
    expect: { client_id: "backend", scope: "export", refresh: false },
  },
};

/** The column's full valid request: its required fields, nothing else. */
async function validRequest(f: Fixture, column: Column): Promise<Record<string, string>> {
  const values = await COLUMN_SETUP[column].values(f);
  const request: Record<string, string> = {};
  for (const field of requiredFields(column)) {
    const value = values[field];
    if (value === undefined) throw new Error(`${column}: no value for required field ${field}`);
    request[field] = value;
  }
  return request;
}

/** The error for a request that leaves out a required field (no Basic header anywhere in the table tests). */
const WHEN_MISSING: Record<Field, Failure> = {
  grant_type: failure(400, "invalid_request"),
  // No Basic header and no client_id: nobody is identified. RFC 6749 §4.1.3/§6/§2.3.1 make client_id REQUIRED, and
  // §5.2 lets that be invalid_request (missing parameter); lib/client_auth/authenticate.ts answers invalid_request
  // for every column, including the confidential ones that still send client_secret.
  client_id: failure(400, "invalid_request"),
  // A confidential client that does not authenticate: RFC 6749 §5.2 invalid_client, 401 with a challenge.
  client_secret: failure(401, "invalid_client", true),
  redirect_uri: failure(400, "invalid_request"),
  code: failure(400, "invalid_request"),
  code_verifier: failure(400, "invalid_request"),
  refresh_token: failure(400, "invalid_request"),
  // Spec §4.2 makes scope required for client_credentials; the server answers invalid_scope (RFC 6749 §5.2).
  scope: failure(400, "invalid_scope"),
};

/** What happens when a `not sent` field is sent anyway: accepted (200 with the column's expected response) or refused. */
type Outcome = "accepted" | Failure;
interface Variant {
  value: string | (() => Promise<string>);
  outcome: Outcome;
  why: string;
}

const IGNORED = (value: string | (() => Promise<string>)): Variant => ({
  value,
  outcome: "accepted",
  why: "the grant does not use it; RFC 6749 §3.2: parameters not defined for the request are ignored",
});
const wellFormedVerifier = async (): Promise<string> => (await pkce()).verifier;
const SECRET_FROM_PUBLIC: Variant = {
  value: "a-secret-the-spa-was-never-given",
  outcome: failure(401, "invalid_client", true),
  why: "a public client has no secret; one that presents a secret fails client authentication",
};
const SCOPE_ON_REFRESH: Variant[] = [
  { value: "read", outcome: "accepted", why: "the original scope may be repeated (RFC 6749 §6)" },
  { value: "write", outcome: failure(400, "invalid_scope"), why: "a refresh never widens or changes the scope (RFC 6749 §6)" },
  { value: "read write", outcome: failure(400, "invalid_scope"), why: "one scope per request (spec §8)" },
];

const IF_SENT_ANYWAY: Record<Column, Partial<Record<Field, Variant[]>>> = {
  "authorization_code (public)": {
    client_secret: [SECRET_FROM_PUBLIC],
    refresh_token: [IGNORED("not-a-refresh-token")],
    // RFC 6749 §4.1.3 has no scope parameter: it is ignored, and the granted scope stays what the user approved.
    scope: [IGNORED("write")],
  },
  "authorization_code (confidential)": {
    code_verifier: [{
      value: wellFormedVerifier,
      outcome: failure(400, "invalid_request"),
      why: "a verifier for a code issued without code_challenge is refused (RFC 9700 §2.1.1, PKCE downgrade)",
    }],
    refresh_token: [IGNORED("not-a-refresh-token")],
    scope: [IGNORED("write")],
  },
  "refresh_token (public)": {
    client_secret: [SECRET_FROM_PUBLIC],
    redirect_uri: [IGNORED(REDIRECT)],
    code: [IGNORED("not-a-code")],
    code_verifier: [IGNORED(wellFormedVerifier)],
    scope: SCOPE_ON_REFRESH,
  },
  "refresh_token (confidential)": {
    redirect_uri: [IGNORED(REDIRECT)],
    code: [IGNORED("not-a-code")],
    code_verifier: [IGNORED(wellFormedVerifier)],
    scope: SCOPE_ON_REFRESH,
  },
  client_credentials: {
    redirect_uri: [IGNORED(REDIRECT)],
    code: [IGNORED("not-a-code")],
    code_verifier: [IGNORED(wellFormedVerifier)],
    refresh_token: [IGNORED("not-a-refresh-token")],
  },
};

async function requiredCell(column: Column, field: Field, cell: string): Promise<void> {
  const f = await fixture();
  const setup = COLUMN_SETUP[column];
  const valid = await validRequest(f, column);
  expect(Object.keys(valid)).toContain(field);
  if (field === "grant_type") expect(valid.grant_type).toBe(cell.replaceAll("`", ""));
  const { [field]: _left, ...without } = valid;
  await expectError(await token(f.server, without), WHEN_MISSING[field], `without ${field}:`);
  // The failed try spent nothing: the full request, with the SAME code / refresh token, still succeeds.
  await expectTokens(f.server, await token(f.server, valid), setup.expect, "full request after the failed try:");
}

async function notSentCell(column: Column, field: Field): Promise<void> {
  const f = await fixture();
  const setup = COLUMN_SETUP[column];
  const valid = await validRequest(f, column);
  expect(valid).not.toHaveProperty(field);
  await expectTokens(f.server, await token(f.server, valid), setup.expect, "the flow without the field:");

  const variants = IF_SENT_ANYWAY[column][field];
  expect(variants?.length, `IF_SENT_ANYWAY must say what ${field} does on ${column}`).toBeGreaterThan(0);
  for (const variant of variants!) {
    const fresh = await validRequest(f, column);
    const value = typeof variant.value === "string" ? variant.value : await variant.value();
    const label = `${field}=${value} sent anyway (${variant.why}):`;
    const response = await token(f.server, { ...fresh, [field]: value });
    if (variant.outcome === "accepted") {
      await expectTokens(f.server, response, setup.expect, label);
    } else {
      await expectError(response, variant.outcome, label);
      await expectTokens(f.server, await token(f.server, fresh), setup.expect, `${label} then the same grant without it:`);
    }
  }
}

describe("spec §4.2 body-field table", () => {
  for (const column of COLUMNS) {
    describe(column, () => {
      for (const row of ROWS) {
        const field = row[0];
        const cell = row[COLUMNS.indexOf(column) + 1]!;
        test(`${column} × ${field}: ${cell.replaceAll("`", "")}`, () =>
          kindOf(cell) === "required" ? requiredCell(column, field, cell) : notSentCell(column, field));
      }
    });
  }

  const specFile = fileURLToPath(new URL("../../../shared/spec/oauth2-service.md", import.meta.url));
  test.skipIf(!existsSync(specFile))("SPEC_TABLE is the spec's table, cell for cell", () => {
    const lines = readFileSync(specFile, "utf8").split("\n");
    const start = lines.findIndex((line) => line.startsWith("| Field | authorization_code (public)"));
    expect(start).toBeGreaterThan(-1);
    const rows: string[][] = [];
    for (const line of lines.slice(start)) {
      if (!line.startsWith("|")) break;
      if (/^\|(-+\|)+$/.test(line.replace(/\s/g, ""))) continue;
      rows.push(line.split("|").slice(1, -1).map((cell) => cell.trim()));
    }
    expect(rows).toEqual(SPEC_TABLE.map((row) => [...row]));
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The token response (spec §2) beyond the table.
// ---------------------------------------------------------------------------------------------------------------

describe("token response", () => {
  test("client_credentials with a client configured for refresh tokens (backend-refresh) carries a refresh_token, which works", async () => {
    const f = await fixture();
    const fields = { grant_type: "client_credentials", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh, scope: "export" };
    const expected = { client_id: "backend-refresh", scope: "export", refresh: true };
    const first = await expectTokens(f.server, await token(f.server, fields), expected);
    const refreshed = await expectTokens(f.server, await token(f.server, {
      grant_type: "refresh_token", client_id: "backend-refresh", client_secret: SECRETS.backendRefresh, refresh_token: first.refresh_token!,
    }), expected);
    expect(refreshed.refresh_token).not.toBe(first.refresh_token);
  });

  test("expires_in follows the configured access-token lifetime, and the token dies then", async () => {
    const f = await fixture({ lifetimes: { accessToken: 120 } });
    const body = await expectTokens(f.server, await token(f.server, {
      grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "read",
    }), { client_id: "backend", scope: "read", refresh: false, expires_in: 120 });
    f.clock.advance(119);
    await expect(bearer(f.server, body.access_token)).resolves.toMatchObject({ client_id: "backend" });
    f.clock.advance(1);
    await expect(bearer(f.server, body.access_token)).rejects.toMatchObject({ code: "invalid_token" });
  });

  test("every issued value is fresh: two identical requests get different tokens", async () => {
    const f = await fixture();
    const fields = { grant_type: "client_credentials", client_id: "backend", client_secret: SECRETS.backend, scope: "export" };
    const expected = { client_id: "backend", scope: "export", refresh: false };
    const a = await expectTokens(f.server, await token(f.server, fields), expected);
    const b = await expectTokens(f.server, await token(f.server, fields), expected);
    expect(a.access_token).not.toBe(b.access_token);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Spec §4.2 rules and §8 limits.
// ---------------------------------------------------------------------------------------------------------------

const cc = (scope: string, clientId = "backend", secret: string = SECRETS.backend): Record<string, string> =>
  ({ grant_type: "client_credentials", client_id: clientId, client_secret: secret, scope });

/** The error redirect of an authorization request, checked to carry `error` and the unchanged state. */
async function authorizeError(f: Fixture, params: Record<string, string>): Promise<string | null> {
  const response = await getAuthorize(f.server, params);
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get("location")!);
  expect(location.origin + location.pathname).toBe(REDIRECT);
  expect(location.searchParams.get("code")).toBeNull();
  expect(location.searchParams.get("state")).toBe(params.state);
  return location.searchParams.get("error");
}

describe("rule 1 / §8: the requested scope must match the client configuration", () => {
  test("client_credentials: a server scope the client is not allowed (backend asks admin) → invalid_scope", async () => {
    const f = await fixture();
    await expectError(await token(f.server, cc("admin")), failure(400, "invalid_scope"));
  });

  test("client_credentials: an unknown scope → invalid_scope; a malformed one → invalid_scope", async () => {
    const f = await fixture();
    await expectError(await token(f.server, cc("no-such-scope")), failure(400, "invalid_scope"));
    await expectError(await token(f.server, cc('re"ad')), failure(400, "invalid_scope"));
  });

  test("client_credentials: each scope the client is allowed works (backend: export, read)", async () => {
    const f = await fixture();
    for (const scope of ["export", "read"]) {
      await expectTokens(f.server, await token(f.server, cc(scope)), { client_id: "backend", scope, refresh: false });
    }
  });

  test("authorization endpoint: a scope the client is not allowed (web asks admin, spa asks export) → error=invalid_scope", async () => {
    const f = await fixture();
    expect(await authorizeError(f, codeRequest("web", { scope: "admin" }))).toBe("invalid_scope");
    const { challenge } = await pkce();
    expect(await authorizeError(f, codeRequest("spa", { scope: "export", code_challenge: challenge, code_challenge_method: "S256" })))
      .toBe("invalid_scope");
  });

  test("refresh: a scope the client is no longer configured for → invalid_scope", async () => {
    const f = await fixture();
    const { refresh_token } = await spaTokens(f.server);
    await f.server.clients.register({ client_id: "spa", name: "Single-page app", type: "public", redirect_uris: [REDIRECT], scopes: ["write"] });
    await expectError(await token(f.server, { grant_type: "refresh_token", client_id: "spa", refresh_token }), failure(400, "invalid_scope"));
  });

  // Rule 1 applies to the token request that issues the token; the refresh grant re-checks the client's scopes,
  // the authorization_code grant does not (lib/grants/authorization_code.ts never reads client.scopes).
  test("code exchange: a scope the client lost between authorization and exchange → invalid_scope", async () => {
    const f = await fixture();
    const { code, verifier } = await spaCode(f.server, "read");
    await f.server.clients.register({ client_id: "spa", name: "Single-page app", type: "public", redirect_uris: [REDIRECT], scopes: ["write"] });
    await expectError(await token(f.server, {
      grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier,
    }), failure(400, "invalid_scope"));
  });
});

describe("rule 2 / §8: one scope per request", () => {
  test("client_credentials with `read export` → invalid_scope (both are allowed to backend one at a time)", async () => {
    const f = await fixture();
    await expectError(await token(f.server, cc("read export")), failure(400, "invalid_scope"));
    await expectError(await token(f.server, cc("read\texport")), failure(400, "invalid_scope"));
  });

  test("authorization endpoint with `read write` → redirect with error=invalid_scope and the state", async () => {
    const f = await fixture();
    expect(await authorizeError(f, codeRequest("web", { scope: "read write" }))).toBe("invalid_scope");
    const { challenge } = await pkce();
    expect(await authorizeError(f, codeRequest("spa", { scope: "read write", code_challenge: challenge, code_challenge_method: "S256" })))
      .toBe("invalid_scope");
  });

  test("authorization endpoint without scope → error=invalid_scope", async () => {
    const f = await fixture();
    const { scope: _scope, ...params } = codeRequest("web");
    expect(await authorizeError(f, params)).toBe("invalid_scope");
  });
});

describe("rule 3: the PKCE verifier must match the challenge", () => {
  const spaExchange = (code: string, verifier: string): Record<string, string> =>
    ({ grant_type: "authorization_code", client_id: "spa", redirect_uri: REDIRECT, code, code_verifier: verifier });
  const spaExpect = { client_id: "spa", scope: "read", refresh: true };

  test("a wrong (well-formed) verifier → invalid_grant; the right one then works, once", async () => {
    const f = await fixture();
    const { code, verifier } = await spaCode(f.server);
    const wrong = (await pkce()).verifier;
    await expectError(await token(f.server, spaExchange(code, wrong)), failure(400, "invalid_grant"));
    await expectTokens(f.server, await token(f.server, spaExchange(code, verifier)), spaExpect);
    await expectError(await token(f.server, spaExchange(code, verifier)), failure(400, "invalid_grant"));
  });

  test("the challenge itself sent as verifier (plain downgrade) → invalid_grant", async () => {
    const f = await fixture();
    const verifier = "A".repeat(43);
    const code = await spaCodeFor(f.server, verifier);
    await expectError(await token(f.server, spaExchange(code, await s256(verifier))), failure(400, "invalid_grant"));
    await expectTokens(f.server, await token(f.server, spaExchange(code, verifier)), spaExpect);
  });

  const malformed: [string, string][] = [
    ["42 characters", "a".repeat(42)],
    ["129 characters", "a".repeat(129)],
    ["an illegal character (/)", "a".repeat(42) + "/"],
    ["an illegal character (space)", "a".repeat(21) + " " + "a".repeat(21)],
    ["a non-ASCII character", "a".repeat(42) + "é"],
  ];
  for (const [what, bad] of malformed) {
    test(`a malformed verifier (${what}) → 400 invalid_request, and the code still works`, async () => {
      const f = await fixture();
      const { code, verifier } = await spaCode(f.server);
      await expectError(await token(f.server, spaExchange(code, bad)), failure(400, "invalid_request"));
      await expectTokens(f.server, await token(f.server, spaExchange(code, verifier)), spaExpect);
    });
  }

  test("verifiers at the RFC 7636 bounds (43 and 128 unreserved characters, all of -._~) work", async () => {
    const f = await fixture();
    for (const verifier of ["-._~" + "x".repeat(39), "Az09-._~".repeat(16)]) {
      const code = await spaCodeFor(f.server, verifier);
      await expectTokens(f.server, await token(f.server, spaExchange(code, verifier)), spaExpect, `verifier of ${verifier.length}:`);
    }
  });

  test("a confidential client that did use PKCE must send its verifier (missing → invalid_request, wrong → invalid_grant)", async () => {
    const f = await fixture();
    const { verifier, challenge } = await pkce();
    const code = await webCode(f.server, { code_challenge: challenge, code_challenge_method: "S256" });
    const fields = { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code };
    await expectError(await token(f.server, fields), failure(400, "invalid_request"));
    await expectError(await token(f.server, { ...fields, code_verifier: (await pkce()).verifier }), failure(400, "invalid_grant"));
    await expectTokens(f.server, await token(f.server, { ...fields, code_verifier: verifier }), { client_id: "web", scope: "read", refresh: true });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Other token-endpoint errors.
// ---------------------------------------------------------------------------------------------------------------

const FORM = "application/x-www-form-urlencoded";
const ccBody = new URLSearchParams(cc("export")).toString();

describe("request format", () => {
  const refused: [string, { body?: string | Uint8Array<ArrayBuffer>; headers?: Record<string, string> }][] = [
    ["application/json", { body: JSON.stringify(cc("export")), headers: { "content-type": "application/json" } }],
    ["a form body labelled application/json", { body: ccBody, headers: { "content-type": "application/json" } }],
    ["text/plain", { body: ccBody, headers: { "content-type": "text/plain" } }],
    ["multipart/form-data", { body: ccBody, headers: { "content-type": "multipart/form-data; boundary=x" } }],
    ["no Content-Type", { body: new TextEncoder().encode(ccBody) }],
  ];
  for (const [what, init] of refused) {
    test(`Content-Type ${what} → 400 invalid_request`, async () => {
      const f = await fixture();
      const response = await rawToken(f.server, init);
      if (what === "no Content-Type") expect(new Request("https://x/", { method: "POST", body: init.body! }).headers.get("content-type")).toBeNull();
      await expectError(response, failure(400, "invalid_request"));
    });
  }

  for (const type of [`${FORM}; charset=UTF-8`, `${FORM};charset=utf-8`, "Application/X-WWW-Form-URLEncoded"]) {
    test(`Content-Type "${type}" is accepted`, async () => {
      const f = await fixture();
      await expectTokens(f.server, await rawToken(f.server, { body: ccBody, headers: { "content-type": type } }),
        { client_id: "backend", scope: "export", refresh: false });
    });
  }

  const repeated: [string, string][] = [
    ["scope=read&scope=read", `${ccBody.replace("scope=export", "scope=read")}&scope=read`],
    ["grant_type twice", `grant_type=client_credentials&${ccBody}`],
    ["client_id twice", `${ccBody}&client_id=backend`],
    ["client_secret twice", `${ccBody}&client_secret=${SECRETS.backend}`],
  ];
  for (const [what, body] of repeated) {
    test(`a repeated parameter (${what}) → 400 invalid_request`, async () => {
      const f = await fixture();
      await expectError(await rawToken(f.server, { body, headers: { "content-type": FORM } }), failure(400, "invalid_request"));
    });
  }

  test("a repeated code → invalid_request, and the code is not spent", async () => {
    const f = await fixture();
    const code = await webCode(f.server);
    const fields = { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code };
    const body = `${new URLSearchParams(fields).toString()}&code=${code}`;
    await expectError(await rawToken(f.server, { body, headers: { "content-type": FORM } }), failure(400, "invalid_request"));
    await expectTokens(f.server, await token(f.server, fields), { client_id: "web", scope: "read", refresh: true });
  });

  for (const method of ["GET", "HEAD", "PUT", "DELETE"]) {
    test(`${method} on the token endpoint → 405 with Allow: POST`, async () => {
      const f = await fixture();
      const response = await rawToken(f.server, { method, headers: {} });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
      expectNoStore(response);
    });
  }
});

describe("grant types and clients", () => {
  for (const grantType of ["password", "implicit", "urn:ietf:params:oauth:grant-type:device_code", "toString", "__proto__", "constructor", "CLIENT_CREDENTIALS"]) {
    test(`grant_type=${grantType} → 400 unsupported_grant_type`, async () => {
      const f = await fixture();
      await expectError(await token(f.server, { ...cc("export"), grant_type: grantType }), failure(400, "unsupported_grant_type"));
      expect(f.errors).toEqual([]);
    });
  }

  test("web (confidential, code grants only) asks client_credentials → 400 unauthorized_client", async () => {
    const f = await fixture();
    await expectError(await token(f.server, cc("read", "web", SECRETS.web)), failure(400, "unauthorized_client"));
  });

  test("backend (client_credentials only) uses authorization_code or refresh_token → 400 unauthorized_client", async () => {
    const f = await fixture();
    const base = { client_id: "backend", client_secret: SECRETS.backend };
    await expectError(await token(f.server, { ...base, grant_type: "authorization_code", code: "x", redirect_uri: REDIRECT }), failure(400, "unauthorized_client"));
    await expectError(await token(f.server, { ...base, grant_type: "refresh_token", refresh_token: "x" }), failure(400, "unauthorized_client"));
  });

  test("a public client asking client_credentials → 401 invalid_client with a Basic challenge", async () => {
    const f = await fixture();
    await expectError(await token(f.server, { grant_type: "client_credentials", client_id: "spa", scope: "read" }), failure(401, "invalid_client", true));
  });
});

describe("codes", () => {
  const webFields = (code: string, extra: Record<string, string> = {}): Record<string, string> =>
    ({ grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code, ...extra });
  const webExpect = { client_id: "web", scope: "read", refresh: true };

  test("an unknown code → invalid_grant", async () => {
    const f = await fixture();
    await expectError(await token(f.server, webFields("no-such-code")), failure(400, "invalid_grant"));
  });

  test("an expired code (clock past 600 s) → invalid_grant", async () => {
    const f = await fixture();
    const code = await webCode(f.server);
    f.clock.advance(601);
    await expectError(await token(f.server, webFields(code)), failure(400, "invalid_grant"));
  });

  test("a code is still good just before 600 s", async () => {
    const f = await fixture();
    const code = await webCode(f.server);
    f.clock.advance(599);
    await expectTokens(f.server, await token(f.server, webFields(code)), webExpect);
  });

  test("a code of another client → invalid_grant, and its own client can still redeem it", async () => {
    const f = await fixture();
    const code = await webCode(f.server);
    await expectError(await token(f.server, webFields(code, { client_id: "other", client_secret: SECRETS.other })), failure(400, "invalid_grant"));
    const spa = await spaCode(f.server);
    await expectError(await token(f.server, webFields(spa.code)), failure(400, "invalid_grant"));
    await expectTokens(f.server, await token(f.server, webFields(code)), webExpect);
  });

  test("redirect_uri different from the authorization request (authorize REDIRECT, exchange OTHER_REDIRECT) → invalid_grant", async () => {
    const f = await fixture();
    const code = await webCode(f.server);
    await expectError(await token(f.server, webFields(code, { redirect_uri: OTHER_REDIRECT })), failure(400, "invalid_grant"));
    await expectError(await token(f.server, webFields(code, { redirect_uri: REDIRECT + "/" })), failure(400, "invalid_grant"));
    await expectTokens(f.server, await token(f.server, webFields(code)), webExpect);
  });

  test("a replayed code → invalid_grant, and the tokens issued from it are revoked", async () => {
    const f = await fixture();
    const code = await webCode(f.server);
    const issued = await expectTokens(f.server, await token(f.server, webFields(code)), webExpect);
    await expectError(await token(f.server, webFields(code)), failure(400, "invalid_grant"));
    await expect(bearer(f.server, issued.access_token)).rejects.toMatchObject({ code: "invalid_token" });
    await expectError(await token(f.server, { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token: issued.refresh_token! }), failure(400, "invalid_grant"));
  });
});

describe("refresh tokens", () => {
  const spaRefresh = (refresh_token: string, clientId = "spa"): Record<string, string> =>
    ({ grant_type: "refresh_token", client_id: clientId, refresh_token });
  const spaExpect = { client_id: "spa", scope: "read", refresh: true };
  const THIRTY_DAYS = 30 * 24 * 3600;

  test("an expired refresh token (clock + 30 days) → invalid_grant", async () => {
    const f = await fixture();
    const { refresh_token } = await spaTokens(f.server);
    f.clock.advance(THIRTY_DAYS);
    await expectError(await token(f.server, spaRefresh(refresh_token)), failure(400, "invalid_grant"));
  });

  test("a refresh token works until just before 30 days, and rotation does not extend the grant", async () => {
    const f = await fixture();
    const { refresh_token } = await spaTokens(f.server);
    f.clock.advance(THIRTY_DAYS - 1);
    const next = await expectTokens(f.server, await token(f.server, spaRefresh(refresh_token)), spaExpect);
    f.clock.advance(1);
    await expectError(await token(f.server, spaRefresh(next.refresh_token!)), failure(400, "invalid_grant"));
  });

  test("an unknown refresh token → invalid_grant", async () => {
    const f = await fixture();
    await expectError(await token(f.server, spaRefresh("no-such-token")), failure(400, "invalid_grant"));
  });

  test("a refresh token of another client → invalid_grant, and its own client can still use it", async () => {
    const f = await fixture();
    const { refresh_token } = await spaTokens(f.server);
    await expectError(await token(f.server, { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token }), failure(400, "invalid_grant"));
    await expectTokens(f.server, await token(f.server, spaRefresh(refresh_token)), spaExpect);
  });

  test("a rotated refresh token reused → invalid_grant, and the whole grant is revoked", async () => {
    const f = await fixture();
    const { refresh_token } = await spaTokens(f.server);
    const next = await expectTokens(f.server, await token(f.server, spaRefresh(refresh_token)), spaExpect);
    await expectError(await token(f.server, spaRefresh(refresh_token)), failure(400, "invalid_grant"));
    await expect(bearer(f.server, next.access_token)).rejects.toMatchObject({ code: "invalid_token" });
    await expectError(await token(f.server, spaRefresh(next.refresh_token!)), failure(400, "invalid_grant"));
  });
});

describe("paused clients", () => {
  test("paused backend → 401 invalid_client and its tokens stop working; resumed → both work again", async () => {
    const f = await fixture();
    const expected = { client_id: "backend", scope: "export", refresh: false };
    const issued = await expectTokens(f.server, await token(f.server, cc("export")), expected);
    await f.server.clients.pause("backend");
    await expectError(await token(f.server, cc("export")), failure(401, "invalid_client", true));
    await expect(bearer(f.server, issued.access_token)).rejects.toMatchObject({ code: "invalid_token" });
    await f.server.clients.resume("backend");
    await expect(bearer(f.server, issued.access_token)).resolves.toMatchObject({ client_id: "backend", scope: "export" });
    await expectTokens(f.server, await token(f.server, cc("export")), expected);
  });

  test("paused web cannot redeem its code or refresh; resumed, the same code and refresh token work", async () => {
    const f = await fixture();
    const first = await webCode(f.server);
    const codeFields = { grant_type: "authorization_code", client_id: "web", client_secret: SECRETS.web, redirect_uri: REDIRECT, code: first };
    const issued = await expectTokens(f.server, await token(f.server, codeFields), { client_id: "web", scope: "read", refresh: true });
    const second = await webCode(f.server);
    await f.server.clients.pause("web");
    await expectError(await token(f.server, { ...codeFields, code: second }), failure(401, "invalid_client", true));
    const refresh = { grant_type: "refresh_token", client_id: "web", client_secret: SECRETS.web, refresh_token: issued.refresh_token! };
    await expectError(await token(f.server, refresh), failure(401, "invalid_client", true));
    await f.server.clients.resume("web");
    await expectTokens(f.server, await token(f.server, { ...codeFields, code: second }), { client_id: "web", scope: "read", refresh: true });
    await expectTokens(f.server, await token(f.server, refresh), { client_id: "web", scope: "read", refresh: true });
  });
});
