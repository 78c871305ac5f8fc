/**
 * The device authorization grant (RFC 8628): a device without a browser (a CLI, a TV, an agent) asks at
 * `/device_authorization`, shows the user a short code and the address of the `/device` page, and polls the
 * token endpoint with `urn:ietf:params:oauth:grant-type:device_code` while the user signs in there on another
 * device and approves. Off unless enabled; a client uses it only when its `grant_types` list it.
 *
 * @module
 */
import { AUTHENTICATION_READS, authenticateClient } from "../client_auth/authenticate.ts";
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";
import { defineFeature, type Feature } from "../core/feature.ts";
import { randomToken } from "../crypto.ts";
import { OAuthError } from "../errors.ts";
import { DEVICE_CODE_GRANT, deviceCode } from "../grants/device_code.ts";
import { jsonResponse } from "../http.ts";
import { requestedScope } from "../scope.ts";
import { sha256 } from "../sha256.ts";
import { memoryThrottle, type Throttle } from "../throttle.ts";
import { newGrantId } from "../tokens.ts";
import { deviceEndpoint } from "./device_page.ts";
import { offlineAccess } from "./offline_access.ts";
import { profile } from "./profile.ts";
import { requestedResource, resourceIndicators } from "./resource_indicators.ts";
import { displayUserCode, newUserCode } from "./user_code.ts";

/** Options of the device flow (`deviceAuthorization` of the server). */
export interface DeviceAuthorizationOptions {
  /** Default false: no device endpoints, no device_code grant. */
  enabled?: boolean;
  /** Seconds a device code and its user code stay valid (`expires_in`). Default 600. */
  expiresIn?: number;
  /** Least seconds between two polls (`interval`); each poll sooner adds 5. Default 5. */
  interval?: number;
}

/** The options this feature adds. */
export interface DeviceAuthorizationFeatureOptions {
  /** The device authorization grant (RFC 8628): `/device_authorization` and the `/device` page. Off by default. */
  deviceAuthorization?: DeviceAuthorizationOptions;
}

/** The device flow, when enabled. */
export interface DeviceAuthorization {
  readonly expiresInMs: number;
  readonly intervalMs: number;
  /** Wrong user codes, per address and per code typed. */
  readonly throttle: Throttle;
}

/** The device flow feature. */
export const deviceAuthorization: Feature<"device_authorization", DeviceAuthorization | null, DeviceAuthorizationFeatureOptions> =
  defineFeature({
    name: "device_authorization",
    doc: "The device authorization grant (RFC 8628): sign-in for devices without a browser, approved at /device.",
    options: [{
      key: "deviceAuthorization",
      type: {
        kind: "object",
        fields: [
          { key: "enabled", type: { kind: "boolean" }, doc: "Serve /device_authorization, the /device page and the device_code grant." },
          { key: "expiresIn", type: { kind: "integer", min: 60, max: 3600 }, doc: "Seconds a device code stays valid; default 600." },
          { key: "interval", type: { kind: "integer", min: 1, max: 60 }, doc: "Least seconds between polls; default 5." },
        ],
      },
      doc: "The device authorization grant (RFC 8628).",
    }],
    reads: [],
    setup(options): DeviceAuthorization | null {
      const device = options.deviceAuthorization;
      if (device?.enabled !== true) return null;
      return {
        expiresInMs: (device.expiresIn ?? 600) * 1000,
        intervalMs: (device.interval ?? 5) * 1000,
        // RFC 8628 §5.1: a few wrong codes, then a pause that doubles while the guessing goes on.
        throttle: memoryThrottle({ maxFailures: 5, windowSeconds: 300, blockSeconds: 60 }),
      };
    },
    endpoints: (state) => [authorizationEndpoint(state), deviceEndpoint(state)],
    grants: () => ({ [DEVICE_CODE_GRANT]: deviceCode }),
    metadata: (_, { url, has }) => (has("device_authorization") ? { device_authorization_endpoint: url("device_authorization") } : {}),
  });

/** Draws user codes until one is free (a clash among live codes is rare: 20^8 of them). */
const ATTEMPTS = 8;

/** `POST /device_authorization` (RFC 8628 §3.1-3.2): client authentication as at the token endpoint. */
function authorizationEndpoint(state: DeviceAuthorization): Endpoint {
  return defineEndpoint({
    name: "device_authorization",
    route: "/device_authorization",
    page: false,
    cors: false,
    // Only where users can sign in at /device (the authenticateUser hook, as for /authorize).
    when: (core) => core.authenticateUser !== undefined,
    reads: [...AUTHENTICATION_READS, "scopes"],
    uses: [profile, resourceIndicators, offlineAccess],
    methods: {
      async POST(exchange, view) {
        const form = await exchange.form();
        const { client } = await authenticateClient(exchange, form, view);
        if (!client.grant_types.includes(DEVICE_CODE_GRANT)) {
          throw new OAuthError("unauthorized_client", { description: "The client may not use the device authorization grant" });
        }
        let scope: string;
        try {
          scope = requestedScope(form.get("scope"), client, {
            policy: view.features.profile.scopePolicy,
            known: view.scopes,
            offlineAccess: view.features.offline_access !== null,
          });
        } catch (error) {
          throw new OAuthError("invalid_scope", { description: (error as OAuthError).description ?? "Invalid scope" });
        }
        const resource = requestedResource(form.get("resource"), view.features.resource_indicators);
        const now = view.clock();
        const deviceCode = randomToken();
        const expiresAt = now + state.expiresInMs;
        for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
          const userCode = newUserCode();
          const stored = await view.storage.saveDeviceAuthorization({
            hash: sha256(deviceCode),
            user_code_hash: sha256(userCode),
            client_id: client.client_id,
            scope,
            ...(resource === undefined ? {} : { resource }),
            grant_id: newGrantId(),
            created_at: now,
            codes_expire_at: expiresAt,
            // Kept as long again, so that a late poll hears expired_token rather than invalid_grant.
            expires_at: expiresAt + state.expiresInMs,
            interval: state.intervalMs,
            status: "pending",
          }, now);
          if (!stored) continue;
          const shown = displayUserCode(userCode);
          const verificationUri = `${view.issuer}/device`;
          return jsonResponse(200, {
            device_code: deviceCode,
            user_code: shown,
            verification_uri: verificationUri,
            verification_uri_complete: `${verificationUri}?user_code=${shown}`,
            expires_in: state.expiresInMs / 1000,
            interval: state.intervalMs / 1000,
          });
        }
        throw new OAuthError("temporarily_unavailable", { description: "No free user code was found; try again" });
      },
    },
  });
}
