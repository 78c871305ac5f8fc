/**
 * The device authorization grant (RFC 8628): the answer of the device authorization endpoint, and each polling
 * answer of §3.5 (authorization_pending, slow_down, access_denied, tokens once). The suite plays the user at the
 * verification URI with its HTML form driver: it opens `verification_uri_complete` (or types the code into the
 * page's form), signs in, and presses Allow or Deny. Needs `clients.device` in the target file: a client allowed
 * the device_code grant (public, or with its secret).
 *
 * @module
 */
import type { CaseDef } from "../case.ts";
import { expectError, expectTokens } from "../checks.ts";
import type { CaseContext } from "../context.ts";
import { CookieJar } from "../drivers/cookies.ts";
import { pageSummary } from "../drivers/driver.ts";
import { type HtmlForm, parseForms } from "../drivers/forms.ts";
import { chooseConsent, fillLogin, submit } from "../drivers/html_form.ts";
import { followRedirects } from "../drivers/redirects.ts";
import { GRANT } from "../features.ts";
import type { Reply } from "../http.ts";
import type { ClientRole } from "../target.ts";
import { ALL } from "./profiles.ts";

const FEATURES = ["device_authorization", "device_code"] as const;
/** The positive control of the other cases: a device code is issued. */
const RESPONSE = "TOKEN-DEVICE-AUTHORIZATION-RESPONSE";
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

interface Started {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

const clientOf = (ctx: CaseContext): ClientRole => ctx.target.clients.device ?? ctx.skip("The target file names no clients.device");

function endpointOf(ctx: CaseContext): string {
  const url = ctx.discovery?.metadata?.device_authorization_endpoint;
  return typeof url === "string" ? url : ctx.skip("The metadata names no device_authorization_endpoint");
}

/** Asks for a device code; fails the case unless the answer has every field RFC 8628 §3.2 requires. */
async function start(ctx: CaseContext): Promise<{ reply: Reply; started: Started }> {
  const client = clientOf(ctx);
  const form: [string, string][] = [["client_id", client.client_id], ["scope", client.scope]];
  if (client.client_secret !== undefined) form.push(["client_secret", client.client_secret]);
  const reply = await ctx.http.send("POST", endpointOf(ctx), { form, headers: { accept: "application/json" } });
  const body = isObj(reply.json) ? reply.json : {};
  if (reply.status !== 200) return ctx.control(() => ctx.fail(`The device authorization endpoint answered ${reply.status}`, reply.exchange));
  for (const field of ["device_code", "user_code", "verification_uri"]) {
    ctx.check(typeof body[field] === "string" && body[field] !== "", `The answer has no ${field} (RFC 8628 §3.2)`, reply.exchange);
  }
  ctx.check(typeof body.expires_in === "number" && body.expires_in > 0, "The answer has no positive expires_in (RFC 8628 §3.2)", reply.exchange);
  return { reply, started: body as unknown as Started };
}

const poll = (ctx: CaseContext, deviceCode: string): Promise<Reply> => {
  const client = clientOf(ctx);
  return ctx.token({ grant_type: GRANT.device_code, device_code: deviceCode, ...ctx.credentials(client) });
};

const wait = (seconds: number) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** The user at the verification URI: types the code if asked, signs in when asked, then presses Allow or Deny. */
async function userDecides(ctx: CaseContext, started: Started, deny: boolean): Promise<void> {
  const jar = new CookieJar();
  const complete = started.verification_uri_complete;
  let step: { url: URL; method: "GET" | "POST"; body?: URLSearchParams } = { url: new URL(complete ?? started.verification_uri), method: "GET" };
  let typed = complete !== undefined;
  let decided = false;
  for (let hops = 0; hops < 6; hops++) {
    const end = await followRedirects(ctx.http.fetch, step.url, { jar, until: () => false }, step.method, step.body);
    if (end.kind === "arrived" || decided) return;
    const html = await end.response.text();
    const forms = parseForms(html, end.url);
    const login = forms.find((f) => f.controls.some((c) => c.tag === "input" && c.type === "password"));
    const approval = ctx.target.approval;
    if (login && approval.driver === "html_form") {
      step = submit(login, fillLogin(login, approval), undefined);
      continue;
    }
    const isCode = (name: string | undefined) => /user_?code|^code$/i.test(name ?? "");
    const entry = typed ? undefined : forms.find((f: HtmlForm) => f.controls.some((c) => isCode(c.name)));
    if (entry) {
      typed = true;
      step = submit(entry, entry.controls.map((c) => (isCode(c.name) ? { ...c, value: started.user_code } : c)), undefined);
      continue;
    }
    const choice = chooseConsent(forms, deny) ??
      ctx.fail(`No ${deny ? "Deny" : "Allow"} button at the verification URI (${end.url}): ${pageSummary(html)}`);
    step = submit(choice.form, choice.form.controls, choice.button);
    decided = true;
  }
  ctx.fail("The verification URI did not reach a decision in six pages");
}

/**
 * Polls at the interval until an answer other than authorization_pending and slow_down, three times at most:
 * the user has decided before the first poll.
 */
async function pollUntilDecided(ctx: CaseContext, started: Started): Promise<Reply> {
  let interval = started.interval ?? 5;
  for (let i = 0; i < 3; i++) {
    await wait(interval);
    const reply = await poll(ctx, started.device_code);
    const error = isObj(reply.json) ? reply.json.error : undefined;
    if (error === "slow_down") interval += 5;
    else if (error !== "authorization_pending") return reply;
  }
  return ctx.fail("The token endpoint still answered authorization_pending after the user decided");
}

export const cases: CaseDef[] = [
  {
    id: "TOKEN-DEVICE-AUTHORIZATION-RESPONSE",
    title: "The device authorization endpoint answers device_code, user_code, verification_uri and expires_in",
    area: "device",
    ref: "RFC 8628 §3.1-3.2",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    positive: true,
    async run(ctx) {
      const { reply, started } = await start(ctx);
      ctx.check((reply.headers.get("cache-control") ?? "").includes("no-store"), "The answer is not Cache-Control: no-store", reply.exchange);
      ctx.check(started.device_code !== started.user_code, "The device code and the user code are the same", reply.exchange);
    },
  },
  {
    id: "TOKEN-DEVICE-PENDING",
    title: "Before the user decides, a poll gets authorization_pending",
    area: "device",
    ref: "RFC 8628 §3.5 (authorization_pending)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    needs: [RESPONSE],
    async run(ctx) {
      const { started } = await start(ctx);
      expectError(ctx, await poll(ctx, started.device_code), ["authorization_pending"], "a poll before the user decided");
    },
  },
  {
    id: "TOKEN-DEVICE-SLOW-DOWN",
    title: "A poll sooner than the interval gets slow_down",
    area: "device",
    ref: "RFC 8628 §3.5 (slow_down), §5.2",
    level: "SHOULD",
    profiles: ALL,
    features: FEATURES,
    needs: [RESPONSE],
    async run(ctx) {
      const { started } = await start(ctx);
      await poll(ctx, started.device_code);
      expectError(ctx, await poll(ctx, started.device_code), ["slow_down"], "a second poll at once");
    },
  },
  {
    id: "TOKEN-DEVICE-APPROVED-ONCE",
    title: "After the user allows at the verification URI, a poll gets tokens, and the next poll does not",
    area: "device",
    ref: "RFC 8628 §3.3, §3.5; RFC 6749 §5.1",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    needs: [RESPONSE],
    security: true,
    async run(ctx) {
      const { started } = await start(ctx);
      await userDecides(ctx, started, false);
      expectTokens(ctx, await pollUntilDecided(ctx, started), "the poll after the user allowed");
      await wait(started.interval ?? 5);
      expectError(ctx, await poll(ctx, started.device_code), ["invalid_grant", "expired_token", "access_denied"], "a poll after the tokens were issued");
    },
  },
  {
    id: "TOKEN-DEVICE-DENIED",
    title: "After the user denies at the verification URI, a poll gets access_denied",
    area: "device",
    ref: "RFC 8628 §3.5 (access_denied)",
    level: "MUST",
    profiles: ALL,
    features: FEATURES,
    needs: [RESPONSE],
    security: true,
    async run(ctx) {
      const { started } = await start(ctx);
      await userDecides(ctx, started, true);
      expectError(ctx, await pollUntilDecided(ctx, started), ["access_denied"], "the poll after the user denied");
    },
  },
];
