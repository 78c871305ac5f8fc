// The guarded outbound fetch (issue 21 finding 1; issue 24's jwks_uri): private hosts refused before any
// connection, redirects never followed, decoded bytes capped while reading (a 211-byte brotli bomb that
// expands to 256 MiB), one deadline for headers and body, typed failures that never quote the query.
// Real HTTP on 127.0.0.1 under vitest, bun test and deno test.
import process from "node:process";
import { afterEach, describe, expect, test } from "vitest";
import { guardedFetch, type GuardedFetchOptions, type GuardedResponse, OutboundError, type OutboundFailure } from "../lib/outbound.ts";
import { BROTLI_BOMB_256_MIB, respond, startServer, type TestServer, trickle } from "./jose/fixtures/http_server.ts";

const g = globalThis as { Deno?: unknown; Bun?: unknown };
const runtime = g.Deno ? "deno" : g.Bun ? "bun" : "node";

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});
async function serve(handler: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(handler);
  servers.push(server);
  return server;
}

/** The failure of a fetch that must fail. */
async function failure(url: string, options: GuardedFetchOptions): Promise<OutboundError> {
  const error = await guardedFetch(url, options).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(OutboundError);
  return error as OutboundError;
}

const CAP = 64 * 1024;
const noFetch = () => {
  const seen: string[] = [];
  return { seen, fetch: (request: Request) => (seen.push(request.url), Promise.resolve(new Response("{}"))) };
};

describe("hosts and schemes", () => {
  test.each([
    "https://127.0.0.1/jwks",
    "https://10.0.0.8/jwks",
    "https://1.1.1.1/jwks",
    "https://2130706433/jwks",
    "https://0x7f.1/jwks",
    "https://[::1]/jwks",
    "https://[fd00::1]/jwks",
    "https://localhost/jwks",
    "https://localhost./jwks",
    "https://api.localhost/jwks",
    "https://printer.local/jwks",
    "https://db.internal/jwks",
    "https://router.home.arpa/jwks",
    "https://intranet/jwks",
  ])("%s is a private host, refused without a connection", async (url) => {
    const { seen, fetch } = noFetch();
    expect((await failure(url, { maxBytes: CAP, fetch })).reason).toBe("private_host");
    expect(seen).toEqual([]);
  });

  test.each([
    ["http://as.example/jwks", "only https"],
    ["https://user:pw@as.example/jwks", "credentials"],
    ["ftp://as.example/jwks", "only https"],
    ["not a url", "absolute URL"],
  ])("%s is refused (%s)", async (url, why) => {
    const { seen, fetch } = noFetch();
    const error = await failure(url, { maxBytes: CAP, fetch });
    expect(error.reason).toBe("refused");
    expect(error.message).toContain(why);
    expect(seen).toEqual([]);
  });

  test("an allowed origin is exempt, exactly: another port of the same host is not", async () => {
    const { seen, fetch } = noFetch();
    const allowOrigins = ["http://127.0.0.1:8123"];
    await guardedFetch("http://127.0.0.1:8123/jwks", { maxBytes: CAP, fetch, allowOrigins });
    expect((await failure("http://127.0.0.1:8124/jwks", { maxBytes: CAP, fetch, allowOrigins })).reason).toBe("private_host");
    expect((await failure("https://127.0.0.1:8123/jwks", { maxBytes: CAP, fetch, allowOrigins })).reason).toBe("private_host");
    expect(seen).toEqual(["http://127.0.0.1:8123/jwks"]);
  });

  test("an operator's URL (trusted) may be loopback and http, never another scheme", async () => {
    const { seen, fetch } = noFetch();
    await guardedFetch("http://localhost:9000/jwks", { maxBytes: CAP, fetch, trusted: true });
    expect((await failure("file:///etc/passwd", { maxBytes: CAP, fetch, trusted: true })).reason).toBe("refused");
    expect((await failure("data:application/json,{}", { maxBytes: CAP, fetch, trusted: true })).reason).toBe("refused");
    expect(seen).toEqual(["http://localhost:9000/jwks"]);
  });

  test("the allowFetch hook sees the URL and has the last word", async () => {
    const { seen, fetch } = noFetch();
    const asked: string[] = [];
    const allowFetch = (url: URL) => (asked.push(url.href), url.hostname !== "blocked.example");
    await guardedFetch("https://ok.example/jwks", { maxBytes: CAP, fetch, allowFetch });
    expect((await failure("https://blocked.example/jwks", { maxBytes: CAP, fetch, allowFetch })).reason).toBe("refused");
    expect(asked).toEqual(["https://ok.example/jwks", "https://blocked.example/jwks"]);
    expect(seen).toEqual(["https://ok.example/jwks"]);
  });
});

describe("over real HTTP", () => {
  test("a 200 is read whole, with identity asked for and no redirect followed", async () => {
    const server = await serve((_request, socket) => respond(socket, 200, { "content-type": "application/json" }, '{"keys":[]}'));
    const response = await guardedFetch(`${server.origin}/jwks`, { maxBytes: CAP, allowOrigins: [server.origin] });
    expect(response.status).toBe(200);
    expect(response.text()).toBe('{"keys":[]}');
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(server.requests[0]!.headers["accept-encoding"]).toBe("identity");
    expect(server.requests[0]!.headers.accept).toBe("application/json");
  });

  test("a redirect is a failure, and its target is never requested", async () => {
    const server = await serve((request, socket) =>
      request.path === "/jwks"
        ? respond(socket, 302, { location: "/elsewhere?token=s3cret" })
        : respond(socket, 200, {}, '{"keys":[]}')
    );
    const error = await failure(`${server.origin}/jwks`, { maxBytes: CAP, allowOrigins: [server.origin] });
    expect([error.reason, error.status]).toEqual(["redirect", 302]);
    expect(server.requests.map((r) => r.path)).toEqual(["/jwks"]);
  });

  test("a status other than 2xx is a failure that names the status and not the query", async () => {
    const server = await serve((_request, socket) => respond(socket, 500, {}, "boom"));
    const error = await failure(`${server.origin}/jwks?client_secret=s3cret`, { maxBytes: CAP, allowOrigins: [server.origin] });
    expect([error.reason, error.status]).toEqual(["status", 500]);
    expect(error.message).toContain("500");
    expect(error.message).not.toContain("s3cret");
    expect(error.message).not.toContain("/jwks");
  });

  test("a declared Content-Length above the cap is refused before the body is read", async () => {
    // Declares 1 GiB, sends 10 bytes, then holds the connection open: only the declaration can refuse it in time.
    const server = await serve((_request, socket) => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1073741824\r\n\r\n");
      socket.write('{"keys":[ ');
    });
    const started = Date.now();
    const error = await failure(`${server.origin}/jwks`, { maxBytes: CAP, timeout: 3000, allowOrigins: [server.origin] });
    expect(error.reason).toBe("too_large");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test("a body without a declared length stops at the cap: cap bytes pass, one more does not", async () => {
    const server = await serve((request, socket) => {
      socket.write("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n");
      socket.end("x".repeat(request.path === "/exact" ? 1000 : 1001));
    });
    const options = { maxBytes: 1000, allowOrigins: [server.origin] };
    expect((await guardedFetch(`${server.origin}/exact`, options)).body.length).toBe(1000);
    expect((await failure(`${server.origin}/over`, options)).reason).toBe("too_large");
  });

  test("headers that never come: the deadline", async () => {
    const server = await serve(() => {});
    const started = Date.now();
    expect((await failure(`${server.origin}/jwks`, { maxBytes: CAP, timeout: 400, allowOrigins: [server.origin] })).reason).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test("a body that trickles a byte every 50 ms: one deadline for the whole exchange", async () => {
    const server = await serve((_request, socket) => trickle(socket, 50));
    const started = Date.now();
    const error = await failure(`${server.origin}/jwks`, { maxBytes: CAP, timeout: 600, allowOrigins: [server.origin] });
    expect(error.reason).toBe("timeout");
    expect(Date.now() - started).toBeGreaterThanOrEqual(550);
    expect(Date.now() - started).toBeLessThan(2500);
  });

  test("a network failure is typed", async () => {
    const server = await serve((_request, socket) => socket.destroy());
    expect((await failure(`${server.origin}/jwks`, { maxBytes: CAP, allowOrigins: [server.origin] })).reason).toBe("network");
  });
});

describe("an injected fetch that misbehaves", () => {
  test("one that ignores the abort signal and never answers still ends at the deadline", async () => {
    const started = Date.now();
    const error = await failure("https://as.example/jwks", { maxBytes: CAP, timeout: 300, fetch: () => new Promise(() => {}) });
    expect(error.reason).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(1500);
  });

  test("one whose body never ends and ignores cancellation still ends at the deadline", async () => {
    const body = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}) });
    const error = await failure("https://as.example/jwks", { maxBytes: CAP, timeout: 300, fetch: async () => new Response(body) });
    expect(error.reason).toBe("timeout");
  });

  test("one that rejects is a network failure, with its error as the cause", async () => {
    const cause = new TypeError("fetch failed");
    const error = await failure("https://as.example/jwks", { maxBytes: CAP, fetch: () => Promise.reject(cause) });
    expect([error.reason, error.cause]).toEqual(["network", cause]);
  });
});

describe("a decompression bomb: 211 bytes of brotli that decode to 256 MiB", () => {
  /** Runs `fetch` while sampling the resident set size; returns its outcome and the peak growth in MiB. */
  async function peakGrowth<T>(run: () => Promise<T>): Promise<{ outcome: T | OutboundError; growth: number }> {
    const base = process.memoryUsage().rss;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 2);
    try {
      const outcome = await run().catch((e: OutboundError) => e);
      // Keep watching a while: a runtime may go on inflating what it received after the read stopped.
      await new Promise((resolve) => setTimeout(resolve, 300));
      peak = Math.max(peak, process.memoryUsage().rss);
      return { outcome, growth: (peak - base) / 2 ** 20 };
    } finally {
      clearInterval(sampler);
    }
  }
  const bombServer = () =>
    serve((_request, socket) =>
      // The attack of issue 21: a matching Content-Length, an encoding that ignores the identity request.
      respond(socket, 200, { "content-type": "application/json", "content-encoding": "br" }, BROTLI_BOMB_256_MIB)
    );

  test("as the runtime's fetch answers our identity request: never more than the cap held, memory bounded", async () => {
    const server = await bombServer();
    const { outcome, growth } = await peakGrowth(() => guardedFetch(`${server.origin}/jwks`, { maxBytes: CAP, allowOrigins: [server.origin] }));
    // Node decodes whatever the server sends, and the read stops at the cap; Deno (honouring the identity
    // request) and Bun (told not to decompress) hand over the 211 bytes as sent, which no JSON parser accepts.
    if (runtime === "node") expect((outcome as OutboundError).reason).toBe("too_large");
    else expect((outcome as GuardedResponse).body.length).toBe(BROTLI_BOMB_256_MIB.length);
    expect(growth).toBeLessThan(96);
  }, 20_000);

  // Skipped on Bun: its fetch inflates the whole body in native code before a byte is read (RSS +288 MiB here),
  // which is why guardedFetch's default fetch tells it not to decompress (the test above).
  test.skipIf(runtime === "bun")("when the runtime asks for br and decodes it: the read stops at the cap, memory bounded", async () => {
    const server = await bombServer();
    // A fetch that drops our Accept-Encoding, so every runtime negotiates compression and decodes the stream.
    const decoding = (request: Request) => {
      const headers = new Headers(request.headers);
      headers.delete("accept-encoding");
      return fetch(request.url, { headers, redirect: "manual", signal: request.signal });
    };
    const { outcome, growth } = await peakGrowth(() =>
      guardedFetch(`${server.origin}/jwks`, { maxBytes: CAP, allowOrigins: [server.origin], fetch: decoding })
    );
    expect((outcome as OutboundError).reason).toBe("too_large" satisfies OutboundFailure);
    expect(growth).toBeLessThan(96);
  }, 20_000);
});
