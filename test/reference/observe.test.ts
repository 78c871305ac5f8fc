// What an operator sees of the reference app: the request log (one JSON line, never a secret), /healthz,
// /readyz (503 when the store is down), and opt-in Prometheus /metrics. In process, on all three runtimes.
import { describe, expect, test } from "vitest";
import { createReferenceApp } from "../../lib/reference/app.ts";
import { DEMO_CONFIG, type ReferenceConfig } from "../../lib/reference/config.ts";
import { memoryStorage } from "../../lib/storage/memory.ts";
import type { Storage } from "../../lib/storage/types.ts";

const ISSUER = "http://127.0.0.1:8080";
const SECRET = "demo-backend-secret-change-me";

/** A memory store whose every call fails while `down` is true. */
function flakyStore(): { storage: Storage; setDown(down: boolean): void } {
  const inner = memoryStorage();
  let down = false;
  const storage = new Proxy(inner, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => (down ? Promise.reject(new Error("ECONNREFUSED")) : value.apply(target, args));
    },
  }) as Storage;
  return { storage, setDown: (d) => void (down = d) };
}

async function app(config: Partial<ReferenceConfig> = {}, storage?: Storage) {
  const lines: string[] = [];
  const built = await createReferenceApp({
    issuer: ISSUER,
    config: { ...structuredClone(DEMO_CONFIG), ...config },
    passwordIterations: 1000,
    log: (line) => lines.push(line),
    ...(storage ? { storage } : {}),
  });
  return { ...built, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const tokenRequest = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
  new Request(`${ISSUER}/index.php?module=OAuth2&action=token`, { method: "POST", headers, body: new URLSearchParams(fields) });

describe("the request log", () => {
  test("the key set, the device endpoint and the device page have their own endpoint names", async () => {
    const { fetch, records } = await app({ device_authorization: { enabled: true } });
    await fetch(new Request(`${ISSUER}/jwks`));
    await fetch(new Request(`${ISSUER}/device_authorization`, { method: "POST", body: new URLSearchParams({ client_id: "demo-spa" }) }));
    await fetch(new Request(`${ISSUER}/device?user_code=BCDF-GHJK`));
    expect(records().map((line) => line.endpoint)).toEqual(["jwks", "device_authorization", "device"]);
  });

  test("one JSON line per request with method, path without the query, status, duration and client_id; no secret", async () => {
    const { fetch, lines, records } = await app();
    const basic = { authorization: `Basic ${btoa(`demo-backend:${SECRET}`)}` };
    const issued = await (await fetch(tokenRequest({ grant_type: "client_credentials", scope: "exports" }, basic))).json();
    await fetch(tokenRequest({ grant_type: "client_credentials", client_id: "demo-backend", client_secret: "wrong-guess-123", scope: "exports" }));
    const authorize = `${ISSUER}/authorize?response_type=code&client_id=demo-spa&redirect_uri=http%3A%2F%2F127.0.0.1%3A9999%2Fcallback&scope=reports.read&state=secret-state&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256`;
    await fetch(new Request(authorize));
    await fetch(new Request(`${ISSUER}/api/me`, { headers: { authorization: `Bearer ${issued.access_token}` } }));
    await fetch(new Request(`${ISSUER}/nowhere?token=abc`));

    expect(lines).toHaveLength(5);
    const [basicLine, postLine, authorizeLine, apiLine, unknownLine] = records();
    expect(basicLine).toMatchObject({ method: "POST", path: "/index.php", endpoint: "token", status: 200, client_id: "demo-backend" });
    expect(typeof basicLine!.duration_ms).toBe("number");
    expect(Date.parse(basicLine!.time as string)).not.toBeNaN();
    expect(postLine).toMatchObject({ endpoint: "token", status: 401, client_id: "demo-backend" });
    expect(authorizeLine).toMatchObject({ method: "GET", path: "/authorize", endpoint: "authorize", status: 200, client_id: "demo-spa" });
    expect(apiLine).toMatchObject({ path: "/api/me", endpoint: "api", status: 200 });
    expect(unknownLine).toMatchObject({ path: "/nowhere", endpoint: "other", status: 404 });
    expect(Object.keys(unknownLine!)).not.toContain("client_id");
    const all = lines.join("\n");
    for (const secret of [SECRET, "wrong-guess-123", issued.access_token, "secret-state", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "token=abc", btoa(`demo-backend:${SECRET}`)]) {
      expect(all).not.toContain(secret);
    }
  });

  test("control characters and huge values cannot forge or flood log lines", async () => {
    const { fetch, lines } = await app();
    await fetch(tokenRequest({ grant_type: "client_credentials", client_id: `x\n{"status":200}${"y".repeat(5000)}`, client_secret: "s" }));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThan(600);
    expect(JSON.parse(lines[0]!).client_id).toMatch(/^x\?\{"status":200\}y+…$/);
  });
});

describe("health", () => {
  test("/healthz answers while the process runs; /readyz answers 503 while the store is down", async () => {
    const { storage, setDown } = flakyStore();
    const { fetch, records } = await app({}, storage);
    expect((await fetch(new Request(`${ISSUER}/healthz`))).status).toBe(200);
    const ready = await fetch(new Request(`${ISSUER}/readyz`));
    expect([ready.status, await ready.json()]).toEqual([200, { status: "ready" }]);
    setDown(true);
    expect((await fetch(new Request(`${ISSUER}/healthz`))).status).toBe(200);
    const down = await fetch(new Request(`${ISSUER}/readyz`));
    expect(down.status).toBe(503);
    expect(down.headers.get("cache-control")).toBe("no-store");
    setDown(false);
    expect((await fetch(new Request(`${ISSUER}/readyz`))).status).toBe(200);
    expect(records().map((r) => r.status)).toEqual([200, 200, 200, 503, 200]);
  });
});

describe("metrics", () => {
  test("/metrics is not served unless the config enables it", async () => {
    const { fetch } = await app();
    expect((await fetch(new Request(`${ISSUER}/metrics`))).status).toBe(404);
  });

  test("requests by endpoint and status, a latency histogram, tokens issued, throttled requests, store errors", async () => {
    const { storage, setDown } = flakyStore();
    const { fetch } = await app({ metrics: { enabled: true } }, storage);
    await fetch(tokenRequest({ grant_type: "client_credentials", client_id: "demo-backend", client_secret: SECRET, scope: "exports" }));
    await fetch(tokenRequest({ grant_type: "client_credentials", client_id: "demo-backend", client_secret: SECRET, scope: "exports" }));
    for (let i = 0; i < 12; i++) await fetch(tokenRequest({ grant_type: "client_credentials", client_id: "demo-backend", client_secret: `wrong-${i}`, scope: "exports" }));
    setDown(true);
    const failed = await fetch(new Request(`${ISSUER}/token`, { method: "POST", body: new URLSearchParams({ grant_type: "client_credentials", client_id: "demo-web", client_secret: "x", scope: "reports.read" }) }));
    expect([500, 503]).toContain(failed.status);
    setDown(false);
    const response = await fetch(new Request(`${ISSUER}/metrics`));
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toContain('oauth2_requests_total{endpoint="token",status="200"} 2');
    expect(text).toMatch(/oauth2_requests_total\{endpoint="token",status="429"\} [1-9]/);
    expect(text).toContain('oauth2_tokens_issued_total{grant_type="client_credentials"} 2');
    expect(text).toMatch(/oauth2_throttled_requests_total\{endpoint="token"\} [1-9]/);
    expect(text).toContain("oauth2_store_errors_total 1");
    expect(text).toContain('oauth2_request_duration_seconds_bucket{endpoint="token",le="+Inf"} 15');
    expect(text).toContain('oauth2_request_duration_seconds_count{endpoint="token"} 15');
    expect(text).toContain("# TYPE oauth2_request_duration_seconds histogram");
    expect(text).not.toContain(SECRET);
  });
});

describe("refused client metadata documents", () => {
  test("31 requests naming missing documents: counted by reason in /metrics, one log line a minute, no error report", async () => {
    const lines: string[] = [];
    const errors: unknown[] = [];
    let now = Date.now();
    const built = await createReferenceApp({
      issuer: ISSUER,
      clock: () => now,
      config: { ...structuredClone(DEMO_CONFIG), metrics: { enabled: true }, client_metadata_documents: { enabled: true } },
      passwordIterations: 1000,
      log: (line) => lines.push(line),
      onError: (error) => errors.push(error),
      fetchDocument: async () => new Response("not found", { status: 404 }),
    });
    for (let i = 0; i < 31; i++) {
      if (i === 30) now += 61_000; // a minute later: one more line, with the count of what it held back
      const url = `${ISSUER}/index.php?${new URLSearchParams({
        module: "OAuth2", action: "authorize", response_type: "code", client_id: `https://docs${i}.example/c.json`,
        redirect_uri: "http://127.0.0.1/cb", scope: "reports.read", code_challenge: "x".repeat(43), code_challenge_method: "S256",
      })}`;
      // From 30 addresses: the per-address ceiling is not what this test is about.
      expect((await built.fetch(new Request(url), { remoteAddr: { hostname: `192.0.2.${i + 1}` } })).status).toBe(400);
    }
    const metrics = await (await built.fetch(new Request(`${ISSUER}/metrics`))).text();
    expect(metrics).toContain('oauth2_client_metadata_documents_refused_total{reason="status"} 31');
    const notices = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === "client.document_refused");
    expect(notices).toEqual([
      { time: expect.any(String), event: "client.document_refused", count: 1, reason: "status", host: "docs0.example" },
      { time: expect.any(String), event: "client.document_refused", count: 30, reason: "status", host: "docs30.example" },
    ]);
    expect(lines.join("\n")).not.toMatch(/\n\s+at |Error/);
    expect(errors).toEqual([]);
    built.close();
  });
});
