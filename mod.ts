/**
 * oauth2-fetch-server: an OAuth 2.0 authorization server as one Web-standard fetch handler.
 *
 * @example
 * ```ts
 * import { createAuthorizationServer } from "oauth2-fetch-server";
 *
 * const server = createAuthorizationServer({
 *   issuer: "https://auth.example.com",
 *   scopes: { "reports.read": "Read your analytics reports" },
 * });
 * const { client_secret } = await server.clients.register({
 *   client_id: "exporter", name: "Nightly export", type: "confidential",
 *   scopes: ["reports.read"], grant_types: ["client_credentials"],
 * });
 * Deno.serve(server.fetch);
 * ```
 *
 * @module
 */
export { type AuthorizationServer, createAuthorizationServer } from "./lib/server.ts";
export type {
  AuthenticateUser,
  AuthorizationServerOptions,
  EndUser,
  ErrorContext,
  InteractionContext,
} from "./lib/options.ts";
export { ConfigurationError, ERROR_STATUS, OAuthError, type OAuthErrorCode, type OAuthErrorOptions } from "./lib/errors.ts";
export type { ClientRegistration, ClientRegistry, RegisteredClient, RegisterOptions } from "./lib/clients.ts";
export type { AccessTokenInfo } from "./lib/bearer.ts";
export type { CoreOptions, ProfileParts, Profile } from "./lib/options.ts";
export type { FeaturesOptions } from "./lib/features/index.ts";
export type { ProfileOptions } from "./lib/features/profile.ts";
export type { ResourceIndicatorOptions } from "./lib/features/resource_indicators.ts";
export type { RefreshGraceOptions } from "./lib/features/refresh_grace.ts";
export type { RegistrationFeatureOptions } from "./lib/features/registration.ts";
export type { DeviceAuthorizationFeatureOptions, DeviceAuthorizationOptions } from "./lib/features/device_authorization.ts";
export type { ClientMetadataDocumentFeatureOptions } from "./lib/features/client_metadata_documents.ts";
export type { CorsOptions } from "./lib/features/cors.ts";
export type { OfflineAccessOptions } from "./lib/features/offline_access.ts";
export type { KeySetFetchOptions, KeySetOptions } from "./lib/features/private_key_jwt.ts";
export type { IssuerKind, JwtBearerOptions, LinkedIdentity, LinkUser, TrustedIssuerOptions } from "./lib/features/jwt_bearer.ts";
export type {
  ExchangeParty,
  ExchangePolicy,
  ExchangeRequest,
  TokenExchangeFeatureOptions,
  TokenExchangeOptions,
} from "./lib/features/token_exchange.ts";
export type { DpopFeatureOptions, DpopOptions } from "./lib/features/dpop.ts";
export type { ErrorHook } from "./lib/core/hooks.ts";
export type { ScopePolicy } from "./lib/scope.ts";
export type { CorsOrigins } from "./lib/features/cors.ts";
export type { ClientMetadataDocumentOptions } from "./lib/features/client_metadata_documents.ts";
export type { RegistrationOptions } from "./lib/features/registration.ts";
export type { AccessTokenFormat, JwtAccessTokenOptions, SigningKeys, SigningKeysOptions } from "./lib/features/jwt_access_tokens.ts";
export type { Rotation, SigningKeyInfo } from "./lib/keys/keyring.ts";
export type { KeyState } from "./lib/keys/key_set.ts";
export type { Jwk, JwsAlgorithm, JwsHeader, JwtClaims, KeySource, VerifiedHeader } from "./lib/jose/mod.ts";
export type { ProtectOptions } from "./lib/guard.ts";
export {
  introspectionTokenVerifier,
  type IntrospectionVerifierOptions,
  type JwksFetchOptions,
  type JwtTokenVerifier,
  jwtTokenVerifier,
  type JwtTokenVerifierOptions,
  localTokenVerifier,
  type LocalVerifierSource,
  type ProtectedResource,
  protectedResource,
  type ProtectedResourceOptions,
  type RequiredScopes,
  type ResourceDpopOptions,
  type TokenVerifier,
} from "./lib/resource_server.ts";
export type { TokenResponse } from "./lib/tokens.ts";
export { type PasswordLogin, passwordLogin, type PasswordLoginOptions } from "./lib/consent/login.ts";
export { hashPassword, isPasswordHash, verifyPassword } from "./lib/reference/passwords.ts";
export { AUDIT_EVENTS, type AuditEvent, type AuditEventType } from "./lib/audit.ts";
export { memoryThrottle, type MemoryThrottleOptions, type Throttle, throttleKey } from "./lib/throttle.ts";
export { MemoryStorage, memoryStorage, type MemoryStorageOptions } from "./lib/storage/memory.ts";
export { type Dialect, type SqlExecutor, type SqlRow, SqlStorage, sqlStorage, type SqlStorageOptions } from "./lib/storage/sql.ts";
export { type RedisExecutor, RedisStorage, redisStorage, type RedisStorageOptions } from "./lib/storage/redis.ts";
export { cachedClients, type CachedClientsOptions } from "./lib/storage/cached_clients.ts";
export { cachedTokens, type CachedTokensOptions } from "./lib/storage/cached_tokens.ts";
export { issuedRecords, type IssuedRecordsOptions } from "./lib/storage/issued_records.ts";
export {
  type AccessTokenRecord,
  type ClientOrigin,
  type ClientRecord,
  type CodeRecord,
  type DeviceAuthorizationRecord,
  type DeviceDecision,
  type DevicePoll,
  type GrantRecord,
  type GrantType,
  type IssuedTokens,
  type ReadOptions,
  type RefreshTokenRecord,
  type Storage,
  STORAGE_METHODS,
} from "./lib/storage/types.ts";
export { type ContractCheck, type ContractOptions, storageContract } from "./lib/storage/contract.ts";
