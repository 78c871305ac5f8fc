/**
 * Capability discovery: one read of the target's RFC 8414 metadata before the cases run, turned into the list
 * of features the server offers (see {@link FEATURES}). The target file may still say what the server has
 * (`features`, and the addresses it names), and that wins over the metadata.
 *
 * @module
 */
import { FEATURES, type FeatureId, type FeatureStatus, type Metadata } from "./features.ts";
import type { FetchLike } from "./http.ts";
import type { Target } from "./target.ts";

/** What the suite learnt about the target before running a case. */
export interface Discovery {
  /** Where the metadata was read. */
  metadata_url: string;
  /** The metadata, when the server serves some. */
  metadata?: Metadata;
  /** Why there is no metadata (status, network error). */
  problem?: string;
  /** Every known feature, offered or not, in the table's order. */
  features: FeatureStatus[];
}

const LIMIT_MS = 5_000;

/** Reads the metadata (bounded in time; a missing document is an answer, not an error). */
async function readMetadata(url: string, fetch: FetchLike): Promise<{ metadata?: Metadata; problem?: string }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), LIMIT_MS);
  try {
    const response = await fetch(new Request(url, { headers: { accept: "application/json" }, redirect: "manual", signal: controller.signal }));
    const text = await response.text();
    if (response.status !== 200) return { problem: `${url} answered ${response.status}` };
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return { problem: `${url} answered 200 with no JSON` };
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) return { problem: `${url} answered JSON that is not an object` };
    return { metadata: body as Metadata };
  } catch (error) {
    return { problem: `${url} could not be read: ${error instanceof Error ? error.message : String(error)}` };
  } finally {
    clearTimeout(timer);
  }
}

/** What the target file says the server has: its `features`, and the addresses that imply one. */
function declared(target: Target): Partial<Record<FeatureId, boolean>> {
  const implied: Partial<Record<FeatureId, boolean>> = {};
  if (target.revocation_url !== undefined) implied.revocation = true;
  if (target.mcp.resource !== undefined) implied.resource_indicators = true;
  return { ...implied, ...target.features };
}

/** The features of a target from its metadata (undefined: none served) and its file. */
export function featuresOf(target: Target, metadata: Metadata | undefined): FeatureStatus[] {
  const says = declared(target);
  return (Object.keys(FEATURES) as FeatureId[]).map((id) => {
    const def = FEATURES[id];
    const advertised = metadata !== undefined && def.detect(metadata);
    const declaration = says[id];
    if (declaration !== undefined) {
      const detail = `the target file says ${declaration ? "offered" : "not offered"}${advertised ? " (the metadata advertises it)" : ""}`;
      return { id, title: def.title, offered: declaration, advertised, source: "target", detail };
    }
    const detail = metadata === undefined ? `no metadata (${def.detected_by})` : advertised ? def.detected_by : `the metadata lacks ${def.detected_by}`;
    return { id, title: def.title, offered: advertised, advertised, source: "metadata", detail };
  });
}

/** Reads the target's metadata once and says which features it offers. */
export async function discover(target: Target, fetch: FetchLike): Promise<Discovery> {
  const { metadata, problem } = await readMetadata(target.metadata_url, fetch);
  const discovery: Discovery = { metadata_url: target.metadata_url, features: featuresOf(target, metadata) };
  if (metadata !== undefined) discovery.metadata = metadata;
  if (problem !== undefined) discovery.problem = problem;
  return discovery;
}

/** Discovery that offers everything: for runs that skip discovery (made-up cases, unit tests). */
export function offerEverything(target: Target): Discovery {
  return {
    metadata_url: target.metadata_url,
    features: (Object.keys(FEATURES) as FeatureId[]).map((id) => ({
      id,
      title: FEATURES[id].title,
      offered: true,
      advertised: false,
      source: "target",
      detail: "discovery was not run",
    })),
  };
}

/** The features of `ids` that the discovery does not offer. */
export function missing(discovery: Discovery, ids: readonly FeatureId[]): FeatureStatus[] {
  return ids.map((id) => discovery.features.find((f) => f.id === id)!).filter((f) => !f.offered);
}
