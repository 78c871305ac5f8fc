/**
 * The feature table: every optional feature, one line each. The option checks, the config file's schema and
 * key table, the router and the metadata document all read it. Adding a feature is one module in this folder
 * (see `lib/core/feature.ts`) and one line here.
 *
 * @module
 */
import type { FeatureOptions } from "../core/feature.ts";
import { clientMetadataDocumentsFeature } from "./client_metadata_documents.ts";
import { cors } from "./cors.ts";
import { offlineAccess } from "./offline_access.ts";
import { profile } from "./profile.ts";
import { refreshGrace } from "./refresh_grace.ts";
import { registration } from "./registration.ts";
import { resourceIndicators } from "./resource_indicators.ts";

/** Every feature, in the order they are set up (and their metadata fields added). */
export const FEATURES: readonly [
  typeof profile,
  typeof resourceIndicators,
  typeof refreshGrace,
  typeof registration,
  typeof clientMetadataDocumentsFeature,
  typeof cors,
  typeof offlineAccess,
] = [
  profile,
  resourceIndicators,
  refreshGrace,
  registration,
  clientMetadataDocumentsFeature,
  cors,
  offlineAccess,
];

/** The options every feature adds to `createAuthorizationServer`. */
export type FeaturesOptions = FeatureOptions<typeof FEATURES>;
