/**
 * Deliberately broken device flows (RFC 8628) around the reference server with the device flow on, each naming
 * the cases that must catch it: by rewriting answers around its fetch handler, or by wrapping its store.
 */
import { DEMO_CONFIG, type ReferenceConfig } from "../../lib/reference/config.ts";
import type { Storage } from "../../lib/storage/types.ts";
import { type Handler, referenceApp, type TestApp } from "./reference.ts";
import type { Variant } from "./variants.ts";

/** The demo with the device flow on (a short interval, so that the polling cases take seconds) and its client. */
export function deviceConfig(config: ReferenceConfig = DEMO_CONFIG): ReferenceConfig {
  return {
    ...config,
    device_authorization: { enabled: true, interval: 1 },
    clients: [...config.clients, {
      client_id: "demo-device", name: "Demo device", redirect_uris: [], scopes: ["reports.read"],
      grant_types: ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"],
    }],
  };
}

const deviceApp = (wrap: (storage: Storage) => Storage = (s) => s): Promise<TestApp> => referenceApp(wrap, { config: deviceConfig() });

/** Rewrites one JSON field of the answers to requests whose path ends with `path`. */
function editJson(inner: Handler, path: string, edit: (body: Record<string, unknown>) => void): Handler {
  return async (request) => {
    const response = await inner(request);
    if (!new URL(request.url).pathname.endsWith(path) && !new URL(request.url).search.includes(`action=${path.slice(1)}`)) return response;
    const text = await response.text();
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return new Response(text, response);
    }
    edit(body);
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    return new Response(JSON.stringify(body), { status: response.status, headers });
  };
}

/** Turns one polling error into another. */
const renameError = (from: string, to: string) => (body: Record<string, unknown>) => {
  if (body.error === from) body.error = to;
};

export const DEVICE_VARIANTS: Variant[] = [
  {
    name: "device authorization answers without verification_uri",
    catches: ["TOKEN-DEVICE-AUTHORIZATION-RESPONSE"],
    async build() {
      const app = await deviceApp();
      return { ...app, fetch: editJson(app.fetch, "/device_authorization", (b) => void delete b.verification_uri) };
    },
  },
  {
    name: "a device that polls too fast is never told slow_down",
    catches: ["TOKEN-DEVICE-SLOW-DOWN"],
    async build() {
      const app = await deviceApp();
      return { ...app, fetch: editJson(app.fetch, "/token", renameError("slow_down", "authorization_pending")) };
    },
  },
  {
    name: "a pending device gets invalid_grant instead of authorization_pending",
    catches: ["TOKEN-DEVICE-PENDING"],
    async build() {
      const app = await deviceApp();
      return { ...app, fetch: editJson(app.fetch, "/token", renameError("authorization_pending", "invalid_grant")) };
    },
  },
  {
    name: "a denial is never reported: the device keeps hearing authorization_pending",
    catches: ["TOKEN-DEVICE-DENIED"],
    async build() {
      const app = await deviceApp();
      return { ...app, fetch: editJson(app.fetch, "/token", renameError("access_denied", "authorization_pending")) };
    },
  },
  {
    name: "an approved device code yields tokens on every poll (the store never marks it redeemed)",
    catches: ["TOKEN-DEVICE-APPROVED-ONCE"],
    build: () =>
      deviceApp((inner) => {
        const broken = Object.create(inner) as Storage;
        broken.pollDeviceAuthorization = async (hash, now) => {
          const poll = await inner.pollDeviceAuthorization(hash, now);
          return poll && poll.record.status === "redeemed" ? { ...poll, record: { ...poll.record, status: "approved" } } : poll;
        };
        broken.redeemDeviceAuthorization = async (hash, tokens, now) =>
          (await inner.redeemDeviceAuthorization(hash, tokens, now)) ?? (await inner.saveTokens(tokens, now), { status: "approved" } as never);
        return broken;
      }),
  },
];
