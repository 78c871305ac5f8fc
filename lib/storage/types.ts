/**
 * The storage contract: a typed interface of OAuth actions, not get/put of key strings.
 *
 * Every secret (client secret, code, access token, refresh token) reaches a store only as its SHA-256 hash.
 * Two operations must be atomic, and say who won: {@link Storage.redeemCode} and
 * {@link Storage.rotateRefreshToken}. `runStorageContract` in `lib/storage/contract.ts` proves it for any
 * store. Times are milliseconds since the epoch, as the server's clock gives them.
 *
 * @module
 */

/** The grant types this server implements. */
export type GrantType = "authorization_code" | "refresh_token" | "client_credentials";

/** A registered client (spec §2 "Client"). */
export interface ClientRecord {
  client_id: string;
  /** SHA-256 of the secret, base64url; confidential clients only. */
  secret_hash?: string;
  /** Shown to the user on the consent page. */
  name: string;
  /** `public` clients keep no secret and must use PKCE (RFC 6749 §2.1). */
  type: "public" | "confidential";
  /** Exact redirect URIs; compared as strings (RFC 9700 §4.1.3). */
  redirect_uris: string[];
  /** Scopes the client may ask for. */
  scopes: string[];
  /** Space-delimited scope granted when a request names none (RFC 6749 §3.3); without it, `scope` is required. */
  default_scope?: string;
  grant_types: GrantType[];
  /** Whether a client_credentials response carries a refresh token. */
  client_credentials_refresh_token: boolean;
  /** A paused client (false) cannot authenticate, and its tokens stop working. */
  active: boolean;
  created_at: number;
}

/** An issued authorization code, stored by hash. */
export interface CodeRecord {
  hash: string;
  /** The grant (token family) every token issued from this code belongs to. */
  grant_id: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  scope: string;
  /** The S256 challenge, when the request carried one (RFC 7636 §4.4). */
  code_challenge?: string;
  expires_at: number;
  /** Set once redeemed; a redeemed code is kept until it expires so that a replay is recognised. */
  redeemed_at?: number;
}

/** An access token, stored by hash. */
export interface AccessTokenRecord {
  hash: string;
  client_id: string;
  /** Absent for client_credentials tokens, which act for the client itself. */
  user_id?: string;
  scope: string;
  expires_at: number;
  /** The grant it belongs to; absent for a client_credentials token that has no refresh token. */
  grant_id?: string;
}

/** A refresh token, stored by hash. */
export interface RefreshTokenRecord {
  hash: string;
  grant_id: string;
  client_id: string;
  user_id?: string;
  scope: string;
  expires_at: number;
  /** Set once rotated; a rotated token is kept until it expires so that its reuse is recognised. */
  rotated_at?: number;
}

/** What one successful code redemption, refresh or client_credentials request stores. */
export interface IssuedTokens {
  access: AccessTokenRecord;
  refresh?: RefreshTokenRecord;
}

/** The storage contract every store implements. */
export interface Storage {
  /** A client by id, or null. */
  getClient(clientId: string): Promise<ClientRecord | null>;
  /** Adds a client, or replaces the one with the same id. */
  saveClient(client: ClientRecord): Promise<void>;
  /** Pauses (false) or resumes (true) a client; returns the updated record, or null if there is none. */
  setClientActive(clientId: string, active: boolean): Promise<ClientRecord | null>;

  /** Stores a newly issued authorization code. */
  saveCode(code: CodeRecord): Promise<void>;
  /** A code by hash, redeemed or not, or null once it has expired or was never issued. */
  findCode(hash: string, now: number): Promise<CodeRecord | null>;
  /**
   * Atomically marks the code redeemed and stores `tokens`, if and only if the code exists, is unexpired and
   * was not redeemed before. Returns the code record to the one caller that won and null to every other.
   */
  redeemCode(hash: string, tokens: IssuedTokens, now: number): Promise<CodeRecord | null>;

  /** Stores tokens issued without a code or a previous refresh token (client_credentials). */
  saveTokens(tokens: IssuedTokens): Promise<void>;
  /** A live access token by hash, or null (unknown, expired or revoked). */
  findAccessToken(hash: string, now: number): Promise<AccessTokenRecord | null>;
  /** A refresh token by hash, rotated or not, or null (unknown, expired or revoked). */
  findRefreshToken(hash: string, now: number): Promise<RefreshTokenRecord | null>;
  /**
   * Atomically marks the refresh token rotated and stores `next`, if and only if the token exists, is unexpired,
   * not revoked and not rotated before. Returns the old record to the one caller that won and null to every
   * other.
   */
  rotateRefreshToken(hash: string, next: IssuedTokens, now: number): Promise<RefreshTokenRecord | null>;

  /** Revokes every code, access token and refresh token of a grant, now and for any later write. */
  revokeGrant(grantId: string): Promise<void>;
  /** Revokes one access token. */
  revokeAccessToken(hash: string): Promise<void>;
}
