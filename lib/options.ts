/**
 * The options of {@link createAuthorizationServer}: the core's, and those each feature of the feature table
 * adds. Their table (types, docs, checks, config keys) is `optionTable()` (`lib/core/assemble.ts`).
 *
 * @module
 */
import type { CoreOptions } from "./core/core_options.ts";
import type { FeaturesOptions } from "./features/index.ts";

export type { AuthenticateUser, EndUser, ErrorContext, InteractionContext } from "./core/hooks.ts";
export type { CoreOptions } from "./core/core_options.ts";
export type { Profile, ProfileParts } from "./features/profile.ts";

/** Options of `createAuthorizationServer`: the core's and every feature's. */
export type AuthorizationServerOptions = CoreOptions & FeaturesOptions;
