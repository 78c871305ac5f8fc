/**
 * What a case works with: the target, a recorder, the approval driver, and helpers for the flows every case
 * repeats (get a code, redeem it, refresh, client_credentials). Helpers fail the case with evidence when a
 * step that is not under test goes wrong.
 *
 * @module
 */
import { type Evidence, exchanges, Outcome } from "./case.ts";
import { expectTokens, type Tokens } from "./checks.ts";
import type { Discovery } from "./discovery.ts";
import type { FeatureId, FeatureStatus } from "./features.ts";
import { type ApprovalDriver, ConsentRemembered, DriverError, isRedirectTo } from "./drivers/driver.ts";
import { describe, type Recorder, type Reply } from "./http.ts";
import { makeVerifier, randomString, s256 } from "./pkce.ts";
import type { ClientRole, CodeClient, Target } from "./target.ts";
import type { Exchange, Profile } from "./types.ts";

/**
 * Moves the server's clock forward, for expiry cases: in process a test injects one; over HTTP the target's
 * `clock.url` does it (see README "Target format").
 */
export type AdvanceClock = (ms: number) => Promise<void>;

/** Which client a code flow runs for. */
export type CodeRole = "public" | "confidential";

/** The client authentication of a token request. */
export interface ClientAuth {
  /** The client's identifier. */
  client_id: string;
  /** Its secret; absent for a public client. */
  client_secret?: string;
}

/** Form fields in order; `undefined` leaves a field out. */
export type Fields = Record<string, string | undefined>;

/** An authorization code and what it was issued for. */
export interface CodeGrant {
  /** The authorization code. */
  code: string;
  /** The client it was issued to. */
  client: CodeClient;
  /** The redirect URI of the request, which the token request must repeat. */
  redirect_uri: string;
  /** The scope asked for. */
  scope: string;
  /** The state sent, which the redirect echoed. */
  state: string;
  /** The PKCE verifier, when the request carried a challenge. */
  verifier?: string;
  /** The redirect that carried the code. */
  redirect: URL;
}

/** Options of {@link CaseContext.code}. */
export interface CodeOptions {
  /** Send a PKCE challenge. Default: for the public client only. */
  pkce?: boolean;
  /** Derive the challenge from this verifier. */
  verifier?: string;
  /** The scope to ask for. Default: the client's scope. */
  scope?: string;
  /** Extra or replaced authorization parameters; `undefined` removes one. */
  params?: Fields;
}

/** How an authorization request ended. */
export type AuthzOutcome =
  | { kind: "redirect"; url: URL; exchanges: Exchange[] }
  | { kind: "refused"; message: string; exchanges: Exchange[] };

/**
 * Where the suite serves Client ID Metadata Documents for the server to fetch: an origin the target's server
 * allows (target file `client_metadata_documents.origin`), opened by whoever runs the suite (the CLI opens a
 * loopback listener). Paths are unique per case, so the server's document cache cannot mix cases up.
 */
export interface DocumentHost {
  /** The origin documents are served from, e.g. `http://127.0.0.1:47801`. */
  readonly origin: string;
  /** Answers GET `path` on that origin with `respond()` until the run ends. */
  serve(path: string, respond: () => Response): void;
}

/** The context of one running case. */
export class CaseContext {
  /** The server under test, as the target file describes it. */
  readonly target: Target;
  /** Sends requests and keeps each exchange as evidence. */
  readonly http: Recorder;
  /** The profile of the run: cases whose rule differs by profile ask it. */
  readonly profile: Profile;
  private readonly driver: ApprovalDriver;
  private readonly clock: AdvanceClock | undefined;
  /** The suite's document host, for the Client ID Metadata Document cases (none: they skip). */
  readonly documents: DocumentHost | undefined;
  /** What the target offers, read from its metadata before the run (capability discovery). */
  readonly discovery: Discovery | undefined;
  /** Rotates the server's signing keys, when the run was given a way to. */
  readonly rotateKeys: (() => Promise<void>) | undefined;
  /**
   * Where the suite serves the public keys it signs with as a client, an identity provider and a workload
   * platform (target file `identity.origin`); the identity cases skip without it.
   */
  readonly keyHost: DocumentHost | undefined;

  /** Made by the runner, one per case. */
  constructor(
    target: Target,
    http: Recorder,
    driver: ApprovalDriver,
    profile: Profile = "spec",
    clock?: AdvanceClock,
    documents?: DocumentHost,
    discovery?: Discovery,
    rotateKeys?: () => Promise<void>,
    keyHost?: DocumentHost,
  ) {
    this.target = target;
    this.http = http;
    this.driver = driver;
    this.profile = profile;
    this.clock = clock;
    this.documents = documents;
    this.discovery = discovery;
    this.rotateKeys = rotateKeys;
    this.keyHost = keyHost;
  }

  /** What discovery found about a feature (offered when discovery was not run). */
  feature(id: FeatureId): FeatureStatus {
    return this.discovery?.features.find((f) => f.id === id) ??
      { id, title: id, offered: true, advertised: false, source: "target", detail: "discovery was not run" };
  }

  /** Ends the case as failed. Without evidence, the last exchange is shown. */
  fail(message: string, evidence?: Evidence, wording = false): never {
    const list = exchanges(evidence);
    const last = this.http.last();
    throw new Outcome("FAIL", message, list.length > 0 ? list : last ? [last] : [], wording);
  }

  /**
   * Runs a positive control, the valid twin of the request under test: a failure inside it BLOCKS the case
   * (nothing can be concluded) instead of failing it. In a `positive` case the runner turns it back into FAIL.
   */
  async control<T>(step: () => T | Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (error instanceof Outcome && error.verdict === "FAIL") {
        throw new Outcome("BLOCKED", `Control failed: ${error.message}`, error.evidence);
      }
      throw error;
    }
  }

  /** Expects the valid twin's reply to be a token response; blocks the case otherwise. */
  twin(reply: Reply, what: string): Promise<Tokens> {
    return this.control(() => expectTokens(this, reply, what));
  }

  /** Whether the server's clock can be moved (see {@link advanceClock}). */
  get hasClock(): boolean {
    return this.clock !== undefined;
  }

  /** Moves the server's clock forward; skips the case when the target offers no clock. */
  async advanceClock(ms: number): Promise<void> {
    if (this.clock === undefined) {
      this.skip('The target has no settable clock: pass one in process, or set "clock.url" in the target file');
    }
    await this.clock(ms);
  }

  /** Ends the case as skipped. */
  skip(message: string): never {
    throw new Outcome("SKIP", message);
  }

  /** Fails the case with `message` unless `condition` holds. (Not an assertion signature: cases are untyped arrows.) */
  check(condition: unknown, message: string, evidence?: Evidence): void {
    if (!condition) this.fail(message, evidence);
  }

  /** The authorization URL with `params` in order (`undefined` values left out). */
  authorizeUrl(params: Fields | [string, string][]): URL {
    const url = new URL(this.target.authorize_url);
    const pairs = Array.isArray(params) ? params : Object.entries(params);
    for (const [name, value] of pairs) if (value !== undefined) url.searchParams.append(name, value);
    return url;
  }

  /** The usual authorization parameters of a client, with a fresh state. */
  authorizeParams(client: CodeClient, scope: string = client.scope, state: string = `s-${randomString(9)}`): Fields {
    return { response_type: "code", client_id: client.client_id, redirect_uri: client.redirect_uri, scope, state };
  }

  /** Runs the approval driver; a driver failure fails the case with the driver's last exchanges. */
  async approve(url: URL, deny = false): Promise<URL> {
    const before = this.http.exchanges.length;
    try {
      return await this.driver.approve(url, { deny, fetch: this.http.fetch });
    } catch (error) {
      if (error instanceof Outcome) throw error;
      if (error instanceof ConsentRemembered) this.skip(describe(error));
      const what = error instanceof DriverError ? "" : "(driver error) ";
      // Getting the user's approval is a control step: without it nothing can be concluded.
      throw new Outcome("BLOCKED", `Approval did not reach the redirect_uri: ${what}${describe(error)}`, this.http.exchanges.slice(before).slice(-2));
    }
  }

  /**
   * Sends an authorization request that may be refused: first without a session, then (for a login or consent
   * page) through the driver. A redirect to the request's redirect_uri is a "redirect", anything else "refused".
   */
  async outcome(url: URL, deny = false): Promise<AuthzOutcome> {
    const before = this.http.exchanges.length;
    const redirectUri = url.searchParams.get("redirect_uri") ?? "";
    const since = () => this.http.exchanges.slice(before);
    const first = await this.http.send("GET", url, { headers: { accept: "text/html" } });
    if (first.location && isRedirectTo(first.location, redirectUri)) {
      return { kind: "redirect", url: first.location, exchanges: since() };
    }
    if (first.status >= 400) return { kind: "refused", message: `status ${first.status}`, exchanges: since() };
    try {
      const final = await this.driver.approve(url, { deny, fetch: this.http.fetch });
      return { kind: "redirect", url: final, exchanges: since() };
    } catch (error) {
      return { kind: "refused", message: describe(error), exchanges: since() };
    }
  }

  /** Gets an authorization code for a role through the driver, failing the case if none comes back. */
  async code(role: CodeRole, options: CodeOptions = {}): Promise<CodeGrant> {
    const client = this.target.clients[role];
    const scope = options.scope ?? client.scope;
    const params = this.authorizeParams(client, scope);
    let verifier: string | undefined;
    if (options.pkce ?? role === "public") {
      verifier = options.verifier ?? makeVerifier();
      params.code_challenge = await s256(verifier);
      params.code_challenge_method = "S256";
    }
    Object.assign(params, options.params);
    const redirect = await this.approve(this.authorizeUrl(params));
    const code = redirect.searchParams.get("code");
    if (code === null || code === "") {
      const error = redirect.searchParams.get("error");
      const detail = error ? `error=${error} ${redirect.searchParams.get("error_description") ?? ""}` : redirect.href;
      return this.control(() => this.fail(`Expected an authorization code for "${client.client_id}", got ${detail.trim()}`));
    }
    const grant: CodeGrant = {
      code,
      client,
      redirect_uri: params.redirect_uri ?? client.redirect_uri,
      scope,
      state: params.state ?? "",
      redirect,
    };
    if (verifier !== undefined) grant.verifier = verifier;
    return grant;
  }

  /** POSTs a form to the token endpoint; `basic` sends client credentials in the Authorization header. */
  token(fields: Fields | [string, string][], options: { basic?: [string, string]; headers?: Fields } = {}): Promise<Reply> {
    const pairs = (Array.isArray(fields) ? fields : Object.entries(fields))
      .filter((p): p is [string, string] => p[1] !== undefined);
    const headers: Record<string, string> = { accept: "application/json" };
    for (const [k, v] of Object.entries(options.headers ?? {})) if (v !== undefined) headers[k] = v;
    if (options.basic) headers.authorization = basicAuth(...options.basic);
    return this.http.send("POST", this.target.token_url, { form: pairs, headers });
  }

  /** The client authentication fields (client_secret_post, as spec §5 has it). */
  credentials(client: ClientAuth): Fields {
    return { client_id: client.client_id, client_secret: client.client_secret };
  }

  /** Redeems a code with exactly the spec table's fields for its client; `overrides` change them. */
  redeem(grant: CodeGrant, overrides: Fields = {}): Promise<Reply> {
    return this.token({
      grant_type: "authorization_code",
      ...this.credentials(grant.client),
      redirect_uri: grant.redirect_uri,
      code: grant.code,
      code_verifier: grant.verifier,
      ...overrides,
    });
  }

  /** A full authorization code flow for a role, ending in checked tokens. */
  async tokens(role: CodeRole, options: CodeOptions = {}): Promise<Tokens & { grant: CodeGrant }> {
    const grant = await this.code(role, options);
    const reply = await this.redeem(grant);
    return { ...(await this.twin(reply, `redeeming a code of "${grant.client.client_id}"`)), grant };
  }

  /** A refresh request with the spec table's fields for `client`. */
  refresh(client: ClientAuth, refreshToken: string, overrides: Fields = {}): Promise<Reply> {
    return this.token({ grant_type: "refresh_token", ...this.credentials(client), refresh_token: refreshToken, ...overrides });
  }

  /** A client_credentials request with the spec table's fields. */
  clientCredentials(client: ClientRole, overrides: Fields = {}): Promise<Reply> {
    return this.token({ grant_type: "client_credentials", ...this.credentials(client), scope: client.scope, ...overrides });
  }

  /** A refresh token from a full code flow, failing the case if none is issued. */
  async refreshToken(role: CodeRole): Promise<Tokens & { refresh_token: string; grant: CodeGrant }> {
    const t = await this.tokens(role);
    if (t.refresh_token === undefined) {
      await this.control(() => this.fail(`No refresh_token for "${t.grant.client.client_id}" (spec §2: present in the authorization code flow)`, t.reply));
    }
    return t as Tokens & { refresh_token: string; grant: CodeGrant };
  }
}

/** HTTP Basic client authentication (RFC 6749 §2.3.1: id and secret form-encoded first). */
export function basicAuth(id: string, secret: string): string {
  const enc = (v: string) => new URLSearchParams({ v }).toString().slice(2);
  return `Basic ${btoa(`${enc(id)}:${enc(secret)}`)}`;
}
