/**
 * The feature table: every optional feature, one line each. The option checks, the config file's schema and
 * key table, the router and the metadata document all read it. Adding a feature is one module in this folder
 * (see `lib/core/feature.ts`) and its entry here: in `FEATURES`, and its options type in `FeaturesOptions` (the
 * public type spelled out, so its documentation names each feature's options; a check below fails to compile
 * when the two disagree).
 *
 * @module
 */
import type { FeatureOptions } from "../core/feature.ts";
import { type ClientMetadataDocumentFeatureOptions, clientMetadataDocumentsFeature } from "./client_metadata_documents.ts";
import { cors, type CorsOptions } from "./cors.ts";
import { type JwtAccessTokenOptions, jwtAccessTokens } from "./jwt_access_tokens.ts";
import { type JwtBearerOptions, jwtBearer } from "./jwt_bearer.ts";
import { type KeySetOptions, keySetsFeature } from "./private_key_jwt.ts";
import { tokenExchange, type TokenExchangeFeatureOptions } from "./token_exchange.ts";
import { offlineAccess, type OfflineAccessOptions } from "./offline_access.ts";
import { profile, type ProfileOptions } from "./profile.ts";
import { refreshGrace, type RefreshGraceOptions } from "./refresh_grace.ts";
import { registration, type RegistrationFeatureOptions } from "./registration.ts";
import { type ResourceIndicatorOptions, resourceIndicators } from "./resource_indicators.ts";

/** Every feature, in the order they are set up (and their metadata fields added). */
export const FEATURES: readonly [
  typeof profile,
  typeof resourceIndicators,
  typeof refreshGrace,
  typeof registration,
  typeof clientMetadataDocumentsFeature,
  typeof cors,
  typeof offlineAccess,
  typeof jwtAccessTokens,
  typeof keySetsFeature,
  typeof jwtBearer,
  typeof tokenExchange,
] = [
  profile,
  resourceIndicators,
  refreshGrace,
  registration,
  clientMetadataDocumentsFeature,
  cors,
  offlineAccess,
  jwtAccessTokens,
  keySetsFeature,
  jwtBearer,
  tokenExchange,
];

/** The options every feature adds to `createAuthorizationServer`. */
export type FeaturesOptions =
  & ProfileOptions
  & ResourceIndicatorOptions
  & RefreshGraceOptions
  & RegistrationFeatureOptions
  & ClientMetadataDocumentFeatureOptions
  & CorsOptions
  & OfflineAccessOptions
  & JwtAccessTokenOptions
  & KeySetOptions
  & JwtBearerOptions
  & TokenExchangeFeatureOptions;

// Fails to compile when a feature of FEATURES is missing from FeaturesOptions, or the other way round.
type Derived = FeatureOptions<typeof FEATURES>;
const complete: [keyof Derived] extends [keyof FeaturesOptions] ? ([keyof FeaturesOptions] extends [keyof Derived] ? true : never) : never =
  true;
void complete;
