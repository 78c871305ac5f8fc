/**
 * The user-code page `/device` (RFC 8628 §3.3): the user types the code their device shows (or follows
 * `verification_uri_complete`), signs in through the server's `authenticateUser` hook, sees which client asks
 * for which scopes and when, and allows or denies. The decision form carries a CSRF token bound to the user and
 * the device authorization, is accepted once, and the store records one decision only. Wrong codes are
 * throttled per address and per code (RFC 8628 §5.1).
 *
 * @module
 */
import { deviceConsentPage, deviceDonePage, userCodePage } from "../consent/device_pages.ts";
import { CSRF_TTL, csrfToken, verifyCsrfToken } from "../consent/csrf.ts";
import { defineEndpoint, type Endpoint } from "../core/endpoint.ts";
import type { Exchange } from "../core/exchange.ts";
import type { EndUser } from "../core/hooks.ts";
import type { View } from "../core/view.ts";
import { pathOf, queryOf, readParams, type ResponseParts } from "../http.ts";
import { sha256 } from "../sha256.ts";
import type { DeviceAuthorizationRecord } from "../storage/types.ts";
import { type Throttle, throttleKey } from "../throttle.ts";
import { canonicalUserCode, displayUserCode } from "./user_code.ts";

const READS = ["clock", "storage", "scopes", "authenticateUser", "csrfKey", "issuer", "formLimits"] as const;
type PageView = View<(typeof READS)[number], readonly []>;

/** What the page needs of the feature's state. */
export interface DevicePageState {
  /** Wrong user codes, per address and per code typed. */
  readonly throttle: Throttle;
}

const NOT_VALID = "That code is not valid, or it has expired. Check the code on your device and try again.";

/** `GET|POST /device`. */
export function deviceEndpoint(state: DevicePageState): Endpoint {
  return defineEndpoint({
    name: "device",
    route: "/device",
    page: true,
    cors: false,
    when: (core) => core.authenticateUser !== undefined,
    reads: READS,
    methods: { GET: (exchange, view) => devicePage(state, exchange, view), POST: (exchange, view) => devicePage(state, exchange, view) },
  });
}

async function devicePage(state: DevicePageState, exchange: Exchange, view: PageView): Promise<ResponseParts | Response> {
  const action = pathOf(exchange.target);
  const { params } = readParams(queryOf(exchange.target), view.formLimits);
  const typed = params.get("user_code");
  if (typed === undefined || typed.trim() === "") return userCodePage({ action });

  const now = view.clock();
  const canonical = canonicalUserCode(typed);
  // Each lookup is reserved as a failure first, so parallel guesses cannot all pass before one is counted; a
  // code that exists gives the reservations back.
  const keys = [throttleKey("device-address", exchange.address ?? "unknown"), throttleKey("device-code", canonical ?? typed)];
  const reserved: string[] = [];
  for (const key of keys) {
    const wait = await (state.throttle.reserve?.(key, now) ?? 0);
    if (wait > 0) {
      for (const k of reserved) await state.throttle.release?.(k, now);
      const seconds = Math.ceil(wait / 1000);
      exchange.emit({ type: "request.throttled", reason: "user_code" });
      return userCodePage({ action, error: `Too many wrong codes. Try again in ${seconds} seconds.`, status: 429, retryAfter: seconds });
    }
    reserved.push(key);
  }
  const record = canonical === null ? null : await view.storage.findDeviceAuthorization(sha256(canonical), now);
  if (record === null) return userCodePage({ action, error: NOT_VALID, status: 400 });
  for (const key of reserved) await state.throttle.release?.(key, now);
  if (record.status !== "pending" || now >= record.codes_expire_at) {
    return deviceDonePage(400, "This code was already used", "Start again on your device to get a new code.", true);
  }
  const client = await view.storage.getClient(record.client_id);
  if (client === null || !client.active) {
    return deviceDonePage(400, "This application is not available", "It is not registered or is paused.", true);
  }

  const form = exchange.request.method === "POST" ? await exchange.form() : null;
  const user = await view.authenticateUser!(exchange.request, {
    form: form ? new URLSearchParams([...form]) : null,
    client: { client_id: client.client_id, name: client.name },
    scope: record.scope,
    remoteAddress: exchange.address,
    issuer: view.issuer,
    audit: (event) => exchange.emit({ client_id: client.client_id, ...event }),
  });
  if (user instanceof Response) return user; // the hook's sign-in page, or its redirect after a sign-in
  if (typeof user !== "object" || user === null || typeof user.id !== "string" || user.id === "") {
    return deviceDonePage(500, "Something went wrong", "The user could not be identified.", true);
  }

  const key = await view.csrfKey();
  const bound = ["device", user.id, record.hash];
  const decision = form?.get("decision");
  if (decision === undefined) {
    return deviceConsentPage({
      clientName: client.name,
      clientId: client.client_id,
      userName: user.name ?? user.id,
      scopes: record.scope.split(" ").map((name) => ({ name, description: view.scopes.get(name) ?? name })),
      requestedAt: record.created_at,
      userCode: displayUserCode(canonical!),
      action: exchange.target,
      csrf: await csrfToken(key, bound, now),
      ...(record.resource === undefined ? {} : { resources: record.resource }),
    });
  }
  const csrf = form!.get("csrf");
  if (!(await verifyCsrfToken(key, csrf, bound, now)) || (decision !== "allow" && decision !== "deny")) {
    return deviceDonePage(403, "Request refused", "The form has expired or did not come from this site. Please start again.", true);
  }
  // One form, one decision: a replayed POST is refused here, and the store accepts one decision per code.
  if (!(await view.storage.markOnce(`device-consent:${sha256(csrf!)}`, now + CSRF_TTL, now))) {
    return deviceDonePage(403, "Request refused", "This form was already used.", true);
  }
  return decide(record, decision === "allow", user, exchange, view, now);
}

async function decide(
  record: DeviceAuthorizationRecord,
  approved: boolean,
  user: EndUser,
  exchange: Exchange,
  view: PageView,
  now: number,
): Promise<ResponseParts> {
  const userId = user.id;
  const decided = await view.storage.decideDeviceAuthorization(
    record.user_code_hash,
    { approved, user_id: userId, ...(user.auth_time === undefined ? {} : { auth_time: user.auth_time }) },
    now,
  );
  if (decided === null) return deviceDonePage(400, "This code was already used", "Start again on your device to get a new code.", true);
  const who = { client_id: record.client_id, user_id: userId };
  exchange.emit({ type: approved ? "consent.granted" : "consent.denied", ...who });
  return approved
    ? deviceDonePage(200, "Device connected", "You can close this page and return to your device.")
    : deviceDonePage(200, "Request denied", "The device was not given access. You can close this page.");
}
