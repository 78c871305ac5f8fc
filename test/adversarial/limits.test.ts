// Limits and abuse (issue "Adversarial testing", part 4): the body-size, parameter-count and parameter-length
// limits through server.fetch, at their defaults and configured; hostile shapes (an endless streamed body, a
// false Content-Length, a megabyte header, a hundred thousand parameters); a brute force spread over both client
// authentication methods and many client ids; and, over a real socket, a slowloris client and a slow body cut off
// by the Node adapter's headersTimeout and requestTimeout.
import { connect } from "node:net";
import { afterAll, describe, expect, test } from "vitest";
import { serveNode } from "../../lib/adapters/node.ts";
import { memoryStorage, type Storage } from "../../mod.ts";
import { authorizeUrl, codeRequest, csrfOf, fixture, getAuthorize, ISSUER, postToken, SECRETS, TOKEN_URL } from "../helpers.ts";
import { basicHeader } from "./arbitraries.ts";
import { figures, oauthErrorProblems, see } from "./support.ts";

const figuresSeen: string[] = [];
afterAll(() => figures(`limits: ${figuresSeen.join("; ")}`));

const form = { "content-type": "application/x-www-form-urlencoded" };
const CC = `grant_type=client_credentials&client_id=backend&client_secret=${SECRETS.backend}&scope=export`;

/** A client_credentials body padded with unknown parameters (each well under the length limit) to `bytes` bytes. */
function padded(bytes: number, unit = "a"): string {
  const size = (text: string) => new TextEncoder().encode(text).length;
  let body = CC;
  for (let i = 0; size(body) < bytes; i++) {
    const head = `&pad${i}=`;
    const room = bytes - size(body) - size(head);
    if (room < 0) {
      body += "&".repeat(bytes - size(body)); // empty pairs are skipped by any form parser
      break;
    }
    const units = Math.min(1_000, Math.floor(room / size(unit)));
    body += head + unit.repeat(units) + (units < 1_000 ? "a".repeat(room - units * size(unit)) : "");
  }
  expect(size(body)).toBe(bytes);
  return body;
}

async function expect413(response: Response, label: string): Promise<void> {
  const seen = await see(response);
  expect({ status: seen.status, problems: oauthErrorProblems(seen) }, `${label}: ${seen.body}`).toEqual({ status: 413, problems: [] });
  expect(JSON.parse(seen.body).error).toBe("invalid_request");
}

describe("body size (limits.maxBodyBytes)", () => {
  test("the default is 16 384 bytes: a body of exactly that is read, one byte more is 413", async () => {
    const { server } = await fixture();
    expect((await server.fetch(new Request(TOKEN_URL, { method: "POST", headers: form, body: padded(16_384) }))).status).toBe(200);
    await expect413(await server.fetch(new Request(TOKEN_URL, { method: "POST", headers: form, body: padded(16_385) })), "16 385 bytes");
    figuresSeen.push("413 past 16384 bytes by default");
  });

  test("a configured limit counts bytes, not characters, at every form-reading endpoint", async () => {
    const { server } = await fixture({ limits: { maxBodyBytes: 1_000 } });
    const post = (url: string, body: string) => server.fetch(new Request(url, { method: "POST", headers: form, body }));
    expect((await post(TOKEN_URL, padded(1_000))).status).toBe(200);
    expect((await post(TOKEN_URL, padded(1_000, "é"))).status).toBe(200);
    await expect413(await post(TOKEN_URL, padded(1_001)), "1 001 bytes");
    const multibyte = padded(1_001, "é");
    expect(multibyte.length).toBeLessThan(1_000); // under the limit in characters, over it in bytes
    await expect413(await post(TOKEN_URL, multibyte), "1 001 bytes of which most are two-byte characters");
    await expect413(await post(`${ISSUER}/revoke`, padded(1_001)), "revocation");
    await expect413(await post(`${ISSUER}/introspect`, padded(1_001)), "introspection");
    figuresSeen.push("413 past a configured 1000 bytes at token, revoke and introspect");
  });

  test("an endless streamed body is cut off at the limit, not read to the end", async () => {
    const { server } = await fixture({ limits: { maxBodyBytes: 1_000 } });
    let pulled = 0;
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 100;
        controller.enqueue(new TextEncoder().encode("a".repeat(100)));
      },
      cancel() {
        cancelled = true;
      },
    }, { highWaterMark: 0 });
    const request = new Request(TOKEN_URL, { method: "POST", headers: form, body: endless, duplex: "half" } as RequestInit);
    await expect413(await server.fetch(request), "an endless stream");
    expect(pulled, "bytes pulled from the client").toBeLessThanOrEqual(1_100);
    expect(cancelled, "the stream is cancelled").toBe(true);
    figuresSeen.push(`endless body cut after ${pulled} bytes`);
  });

  test("with a Content-Length, as runtimes' requests carry one: the limit holds exactly, and a false one is caught", async () => {
    const { server } = await fixture({ limits: { maxBodyBytes: 1_000 } });
    const post = (body: string, length: number) =>
      server.fetch(new Request(TOKEN_URL, { method: "POST", headers: { ...form, "content-length": String(length) }, body }));
    expect((await post(padded(1_000), 1_000)).status).toBe(200);
    await expect413(await post(padded(1_001), 1_001), "1 001 bytes, declared");
    // Over the limit by its declaration alone: refused before a byte is read.
    await expect413(await post(CC, 1_001), "a declared length over the limit");
    await expect413(await post(CC, 1_000_000), "a declared megabyte");
    // A Request built in process whose Content-Length understates its body: the bytes are counted anyway.
    await expect413(await post(padded(1_001), 10), "a Content-Length that lies");
    await expect413(await post(padded(5_000), 1_000), "a Content-Length that lies, by a lot");
  });

  test("the consent form over the limit gets a 413 page, and no code", async () => {
    const { server } = await fixture({ limits: { maxBodyBytes: 1_000 } });
    const params = codeRequest("web");
    const csrf = csrfOf(await (await getAuthorize(server, params)).text());
    const body = new URLSearchParams({ decision: "allow", csrf, pad: "a".repeat(1_000) });
    const seen = await see(await server.fetch(new Request(authorizeUrl(params), { method: "POST", headers: form, body })));
    expect(seen.status).toBe(413);
    expect(seen.headers.get("location")).toBeNull();
    expect(seen.headers.get("content-type")).toMatch(/^text\/html/);
  });
});

describe("parameters (limits.maxParameters, limits.maxParameterLength)", () => {
  const extra = (n: number, prefix = "x") => Array.from({ length: n }, (_, i) => `&${prefix}${i}=1`).join("");

  test("the defaults: 64 parameters and 4 096 characters pass, one more of either does not", async () => {
    const { server } = await fixture();
    const post = (body: string) => server.fetch(new Request(TOKEN_URL, { method: "POST", headers: form, body }));
    expect((await post(CC + extra(60))).status).toBe(200);
    expect(await (await post(CC + extra(61))).json()).toMatchObject({ error: "invalid_request", error_description: "Too many parameters" });
    expect((await post(`${CC}&pad=${"a".repeat(4_096)}`)).status).toBe(200);
    expect(await (await post(`${CC}&pad=${"a".repeat(4_097)}`)).json()).toMatchObject({ error: "invalid_request", error_description: "A parameter is too long" });
    expect((await post(`${CC}&${"n".repeat(4_097)}=1`)).status).toBe(400);
    figuresSeen.push("400 past 64 parameters and 4096 characters by default");
  });

  test("configured limits hold at the token endpoint; repeats count; a character is counted once decoded", async () => {
    const { server } = await fixture({ limits: { maxParameters: 6, maxParameterLength: 100 } });
    const post = async (body: string) => {
      const seen = await see(await server.fetch(new Request(TOKEN_URL, { method: "POST", headers: form, body })));
      if (seen.status !== 200) expect(oauthErrorProblems(seen), seen.body).toEqual([]);
      return seen;
    };
    expect((await post(CC + extra(2))).status).toBe(200);
    expect((await post(CC + extra(3))).status).toBe(400);
    expect((await post(`${CC}&x=1&x=1&x=1`)).status).toBe(400);
    expect((await post(`${CC}&pad=${"a".repeat(100)}`)).status).toBe(200);
    expect((await post(`${CC}&pad=${"%41".repeat(100)}`)).status).toBe(200);
    expect((await post(`${CC}&pad=${"a".repeat(101)}`)).status).toBe(400);
    expect((await post(`${CC}&${"n".repeat(101)}=1`)).status).toBe(400);
    figuresSeen.push("400 past a configured 6 parameters and 100 characters");
  });

  test("at the authorization endpoint a query over a limit gets an error page, never a redirect", async () => {
    const { server } = await fixture({ limits: { maxParameters: 6, maxParameterLength: 100 } });
    const get = async (params: Record<string, string>, extraQuery = "") => {
      const seen = await see(await server.fetch(new Request(`${ISSUER}/authorize?${new URLSearchParams(params)}${extraQuery}`)));
      if (seen.status !== 200) {
        expect(seen.headers.get("location"), "no redirect").toBeNull();
        expect(seen.headers.get("content-type")).toMatch(/^text\/html/);
      }
      return seen.status;
    };
    const base = codeRequest("web"); // five parameters
    expect(await get(base, "&prompt=login")).toBe(200);
    expect(await get(base, "&prompt=login&nonce=1")).toBe(400);
    expect(await get({ ...base, state: "s".repeat(100) })).toBe(200);
    expect(await get({ ...base, state: "s".repeat(101) })).toBe(400);
  });

  test("a hundred thousand parameters, or a megabyte header, are refused at once", async () => {
    const { server } = await fixture();
    const started = Date.now();
    const many = "&p=1".repeat(100_000);
    expect((await server.fetch(new Request(`${ISSUER}/index.php?module=OAuth2&action=authorize${many}`))).status).toBe(400);
    expect((await server.fetch(new Request(TOKEN_URL, { method: "POST", headers: form, body: `${CC}${many}`.slice(0, 16_000) }))).status).toBe(400);
    const huge = "A".repeat(1_000_000);
    expect((await postToken(server, { grant_type: "client_credentials", scope: "export" }, { authorization: `Basic ${huge}` })).status).toBe(401);
    const guard = server.protect("read", () => new Response("ok"));
    expect((await guard(new Request(`${ISSUER}/api`, { headers: { authorization: `Bearer ${huge}` } }))).status).toBe(401);
    expect((await guard(new Request(`${ISSUER}/api`, { headers: { authorization: `Bearer ${huge}!` } }))).status).toBe(400);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(3_000);
    figuresSeen.push(`100000 parameters and 1 MB headers refused in ${elapsed} ms`);
  });
});

test("a brute force over both authentication methods and many client ids, from one address, is throttled before the store", async () => {
  const inner = memoryStorage();
  let reads = 0;
  const counting: Storage = Object.assign(Object.create(inner) as Storage, {
    getClient: (id: string) => {
      reads++;
      return inner.getClient(id);
    },
  });
  const { server } = await fixture({ storage: counting });
  const attacker = { remoteAddr: { hostname: "203.0.113.66" } };
  const attempts = 200;
  let throttled = 0;
  let readsWhileBlocked = 0;
  for (let i = 0; i < attempts; i++) {
    const id = ["backend", "web", "other", `ghost-${i}`][i % 4]!;
    const guess = `guess-${i}-0123456789abcdef`;
    const headers: Record<string, string> = { ...form };
    let body = `grant_type=client_credentials&scope=export`;
    if (i % 2) headers.authorization = basicHeader(id, guess);
    else body += `&client_id=${id}&client_secret=${guess}`;
    const before = reads;
    const seen = await see(await server.fetch(new Request(TOKEN_URL, { method: "POST", headers, body }), attacker));
    if (seen.status === 429) {
      throttled++;
      readsWhileBlocked += reads - before;
      expect(oauthErrorProblems(seen), seen.body).toEqual([]);
      expect(Number(seen.headers.get("retry-after"))).toBeGreaterThan(0);
    } else expect(seen.status).toBe(401);
  }
  // The default throttle allows 10 failures per address and per minute before it blocks.
  expect(throttled).toBe(attempts - 10);
  expect(readsWhileBlocked, "store reads by blocked attempts").toBe(0);
  // The real client, from elsewhere, is not locked out.
  const real = await server.fetch(new Request(TOKEN_URL, { method: "POST", headers: form, body: CC }), { remoteAddr: { hostname: "198.51.100.7" } });
  expect(real.status).toBe(200);
  figuresSeen.push(`brute force ${attempts} attempts, ${throttled} throttled with 429 and no store read`);
});

describe("slow clients over a real socket (serveNode)", () => {
  const HEADERS_TIMEOUT = 300;
  const REQUEST_TIMEOUT = 600;
  /** Node enforces both timeouts on a timer; serveNode sets it to 1 s (connectionsCheckingInterval). */
  const CHECK_INTERVAL = 1_000;
  /** Slack for a busy CI machine; still far below the defaults (10 s, 30 s). */
  const SLACK = 1_500;
  /** Past this the test gives up: the defaults would still be waiting. */
  const GIVE_UP = 6_000;

  /** Opens a connection, sends `first`, then one `drip` every 100 ms; resolves when the server closes it. */
  function trickle(port: number, first: string, drip: string): Promise<{ ms: number; reply: string; closed: boolean }> {
    return new Promise((resolve) => {
      const socket = connect(port, "127.0.0.1");
      const started = Date.now();
      let reply = "";
      socket.setEncoding("utf8");
      socket.write(first);
      const timer = setInterval(() => {
        if (!socket.destroyed && socket.writable) socket.write(drip);
      }, 100);
      const done = (closed: boolean) => {
        clearInterval(timer);
        clearTimeout(limit);
        socket.destroy();
        resolve({ ms: Date.now() - started, reply, closed });
      };
      const limit = setTimeout(() => done(false), GIVE_UP);
      socket.on("data", (chunk: string) => (reply += chunk));
      socket.on("error", () => {});
      socket.on("close", () => done(true));
    });
  }

  test("a slowloris client (headers trickled) and a slow body are cut off within the configured timeouts", async () => {
    const { server } = await fixture();
    const served = await serveNode(server, { port: 0, headersTimeout: HEADERS_TIMEOUT, requestTimeout: REQUEST_TIMEOUT });
    try {
      const [loris, body, fast] = await Promise.all([
        trickle(served.port, "POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-Slow: 1\r\n"),
        trickle(
          served.port,
          `POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10000\r\n\r\n`,
          "a",
        ),
        // Meanwhile an ordinary client is served as usual.
        new Promise<number>((resolve) => setTimeout(resolve, 150)).then(() =>
          fetch(`${served.url}/token`, { method: "POST", headers: form, body: CC }).then((r) => r.status)
        ),
      ]);
      expect(fast).toBe(200);
      expect(loris.closed, "the slowloris connection was closed").toBe(true);
      expect(loris.ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT - 50);
      expect(loris.ms).toBeLessThanOrEqual(HEADERS_TIMEOUT + CHECK_INTERVAL + SLACK);
      expect(loris.reply).toMatch(/^HTTP\/1\.1 408 |^$/);
      expect(body.closed, "the slow-body connection was closed").toBe(true);
      expect(body.ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT - 50);
      expect(body.ms).toBeLessThanOrEqual(REQUEST_TIMEOUT + CHECK_INTERVAL + SLACK);
      expect(body.reply).toMatch(/^HTTP\/1\.1 408 |^$/);
      figuresSeen.push(`slowloris cut after ${loris.ms} ms (headersTimeout ${HEADERS_TIMEOUT}), slow body after ${body.ms} ms (requestTimeout ${REQUEST_TIMEOUT})`);
    } finally {
      await served.close();
    }
  }, 15_000);

  test("a client that is slow but within the timeouts is served", async () => {
    // Slower than Node's 1 s check, so that a server cutting clients off sooner than configured is caught.
    const { server } = await fixture();
    const served = await serveNode(server, { port: 0, headersTimeout: 3_000, requestTimeout: 4_000 });
    try {
      const reply = await new Promise<string>((resolve) => {
        const socket = connect(served.port, "127.0.0.1");
        let text = "";
        socket.setEncoding("utf8");
        socket.on("data", (chunk: string) => (text += chunk));
        socket.on("close", () => resolve(text));
        socket.on("error", () => resolve(text));
        socket.write("POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        setTimeout(() => socket.write(`Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${CC.length}\r\nConnection: close\r\n\r\n`), 1_300);
        setTimeout(() => socket.write(CC), 1_700);
      });
      expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      await served.close();
    }
  }, 15_000);
});

describe("round-2 addresses (issue 15 item 13): an endless body is cut off everywhere a body is read", () => {
  /** A body that never ends, counting what the server pulled. */
  function endless() {
    const seen = { pulled: 0, cancelled: false };
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        seen.pulled += 1_000;
        controller.enqueue(new TextEncoder().encode("a".repeat(1_000)));
      },
      cancel() {
        seen.cancelled = true;
      },
    }, { highWaterMark: 0 });
    return { seen, body };
  }

  test("/register, /logout, /account/apps and the reference server's token endpoint: 413 or 4xx, at most a few KiB read", async () => {
    const { createReferenceApp } = await import("../../lib/reference/app.ts");
    const { DEMO_CONFIG } = await import("../../lib/reference/config.ts");
    const config = structuredClone(DEMO_CONFIG);
    config.registration = { enabled: true };
    const app = await createReferenceApp({ issuer: "http://127.0.0.1:8080", config, passwordIterations: 1000, purgeInterval: 0, log: () => {} });
    const { server } = await fixture({ registration: { enabled: true } });
    const targets: [string, (request: Request) => Promise<Response>, string][] = [
      ["library /register", (r) => server.fetch(r), `${ISSUER}/register`],
      ["reference /register", app.fetch, "http://127.0.0.1:8080/register"],
      ["reference /logout", app.fetch, "http://127.0.0.1:8080/logout"],
      ["reference /account/apps", app.fetch, "http://127.0.0.1:8080/account/apps"],
      ["reference token", app.fetch, "http://127.0.0.1:8080/index.php?module=OAuth2&action=token"],
    ];
    // Signed in, so that /logout reads its form (signed out, it reads nothing and answers "not signed in").
    const apps = "http://127.0.0.1:8080/account/apps";
    const page = await app.fetch(new Request(apps));
    const nonce = page.headers.getSetCookie().map((c) => c.split(";")[0]!).join("; ");
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const login = await app.fetch(new Request(apps, { method: "POST", headers: { ...form, cookie: nonce }, body: new URLSearchParams({ username: "demo", password: "demo-password", csrf }) }));
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith("oauth2_session="))!.split(";")[0]!;
    for (const [label, handler, url] of targets) {
      for (const type of ["application/json", "application/x-www-form-urlencoded"]) {
        const { seen, body } = endless();
        const headers = { "content-type": type, origin: "http://127.0.0.1:8080", cookie };
        const request = new Request(url, { method: "POST", headers, body, duplex: "half" } as RequestInit);
        const response = await handler(request);
        expect(response.status, `${label} (${type})`).toBeGreaterThanOrEqual(400);
        expect(response.status, `${label} (${type})`).toBeLessThan(500);
        expect(seen.pulled, `${label} (${type}): bytes pulled`).toBeLessThanOrEqual(17_000);
        figuresSeen.push(`${label} ${type.split("/")[1]}: ${response.status} after ${seen.pulled} bytes`);
      }
    }
    app.close();
  }, 30_000);
});
