/**
 * What a profile requires the server to offer: one case per required feature, which fails (a MUST) or warns (a
 * SHOULD) when capability discovery finds the feature missing. The cases of a feature that is merely optional
 * are NOT_OFFERED instead (see `CaseDef.features`).
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { summary } from "../checks.ts";
import { FEATURES, type FeatureId } from "../features.ts";
import type { Level, Profile } from "../types.ts";
import { MCP, SPEC } from "./profiles.ts";

/** One feature a profile requires. */
export interface Requirement {
  /** The case that checks it. */
  id: string;
  /** The feature required. */
  feature: FeatureId;
  /** MUST fails the run when it is missing; SHOULD warns. */
  level: Level;
  /** The profiles that require it. */
  profiles: readonly Profile[];
  /** What the case checks, in one line. */
  title: string;
  /** The rule that requires it. */
  ref: string;
}

/** MCP 2026-07-28 `basic/authorization`: the authorization server requirements (field notes §3, rows 2-4). */
const MCP_AUTH = "MCP authorization 2026-07-28";

/** Every profile's required features. */
export const REQUIREMENTS: readonly Requirement[] = [
  {
    id: "TOKEN-CC-OFFERED",
    feature: "client_credentials",
    level: "MUST",
    profiles: SPEC,
    title: "The server offers the client_credentials grant and says so in its metadata",
    ref: "spec §4.2 (the client_credentials column of the body-field table); RFC 6749 §4.4; RFC 8414 §2 (grant_types_supported)",
  },
  {
    id: "MCP-METADATA-PKCE",
    feature: "pkce_s256",
    level: "MUST",
    profiles: MCP,
    title: "The metadata announces PKCE with S256 (MCP clients refuse a server that does not)",
    ref: `${MCP_AUTH} (security considerations, authorization code protection: code_challenge_methods_supported); RFC 8414 §2`,
  },
  {
    id: "MCP-METADATA-CODE",
    feature: "response_type_code",
    level: "MUST",
    profiles: MCP,
    title: 'The metadata announces the "code" response type',
    ref: `${MCP_AUTH} (authorization server metadata); RFC 8414 §2 (response_types_supported REQUIRED)`,
  },
  {
    id: "MCP-CIMD-SUPPORTED",
    feature: "client_id_metadata_documents",
    level: "SHOULD",
    profiles: MCP,
    title: "The server supports client ID metadata documents and says so in its metadata",
    ref: `${MCP_AUTH} (overview 2; client registration: client ID metadata documents, advertising); RFC 8414 §2`,
  },
];

/** The required features of a profile. */
export function requirementsOf(profile: Profile): Requirement[] {
  return REQUIREMENTS.filter((r) => r.profiles.includes(profile));
}

/** The case of one requirement: it reads the metadata again, as evidence, and asks discovery. */
function requirementCase(r: Requirement): CaseDef {
  return {
    id: r.id,
    title: r.title,
    area: "requirements",
    ref: r.ref,
    level: r.level,
    profiles: r.profiles,
    positive: true,
    async run(ctx) {
      const status = ctx.feature(r.feature);
      if (status.offered) return `${FEATURES[r.feature].title}: ${status.detail}`;
      const reply = await ctx.http.send("GET", ctx.target.metadata_url, { headers: { accept: "application/json" } });
      const found = reply.status === 200 ? status.detail : `no metadata at ${ctx.target.metadata_url} (${summary(reply)})`;
      return ctx.fail(`Profile ${ctx.profile} requires ${FEATURES[r.feature].title} (${FEATURES[r.feature].ref}): ${found}`, reply);
    },
  };
}

export const cases: CaseDef[] = REQUIREMENTS.map(requirementCase);
