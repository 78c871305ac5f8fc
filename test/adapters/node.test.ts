/**
 * The Node adapter over real sockets on 127.0.0.1, with small fake apps instead of the server.
 */
import { Buffer } from "node:buffer";
import { EventEmitter } from "node:events";
import {
  Agent,
  createServer,
  type IncomingMessage,
  request as httpRequest,
  type Server,
  type ServerResponse,
} from "node:http";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  type FetchApp,
  type NodeIncomingMessage,
  type NodeListenerOptions,
  serveNode,
  toNodeListener,
} from "../../lib/adapters/node.ts";
import { OAuthError } from "../../lib/errors.ts";
import { readText, remoteAddressOf, respond, type ResponseParts, targetOf } from "../../lib/http.ts";

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** Serves a listener on a free port. */
async function listen(listener: Listener): Promise<number> {
  const server = createServer(listener);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

/** Serves an app through toNodeListener. */
function serve(app: FetchApp, options?: NodeListenerOptions): Promise<number> {
  return listen(toNodeListener(app, options));
}

interface Reply {
  status: number;
  statusMessage: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** One request over a fresh connection. */
function send(
  port: number,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; agent?: Agent } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const { method = "GET", headers, agent = false } = init;
    const req = httpRequest(
      { host: "127.0.0.1", port, path, method, headers, agent },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode!, statusMessage: res.statusMessage!, headers: res.headers, body }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

/** Writes raw bytes and returns everything the server sends until it closes. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("end", () => resolve(received));
    socket.on("error", reject);
    socket.write(text);
  });
}

/** What the fake apps below read of a request, as the core's endpoints read it. */
interface CoreView {
  method: string;
  target: string;
  header(name: string): string | null;
  text(limit: number): Promise<string>;
  remoteAddress: string | undefined;
  toRequest(): Request;
}

/**
 * A fake app that reads and answers as the core does (parts through `respond`, so the adapter gets a lazy
 * `Response`, or a hook's own `Response`); it renders an `OAuthError` and lets anything else throw.
 */
const handleApp = (fn: (request: CoreView) => Promise<ResponseParts | Response> | ResponseParts | Response): FetchApp => ({
  fetch: async (request, info) => {
    const view: CoreView = {
      method: request.method,
      target: targetOf(request.url),
      header: (name) => request.headers.get(name),
      text: (limit) => readText(request, limit),
      remoteAddress: remoteAddressOf(request, info),
      toRequest: () => request,
    };
    try {
      const answer = await fn(view);
      return answer instanceof Response ? answer : respond(request, answer);
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      return respond(request, { status: error.status, headers: [], body: JSON.stringify({ error: error.code }) });
    }
  },
});

const text = (body: string, status = 200, headers: [string, string][] = []): ResponseParts => ({
  status,
  headers: [["content-type", "text/plain"], ...headers],
  body,
});

/** A hook's own `Response`, passed through as the core does. */
const passthrough = (response: Response): Response => response;

const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("toNodeListener: requests", () => {
  it("passes method, target and body to handle, and answers with a sized body", async () => {
    const port = await serve(handleApp(async (req) => text(`${req.method} ${req.target} ${await req.text(1000)}`)));
    const reply = await send(port, "/token?x=1", { method: "POST", body: "grant_type=client_credentials" });
    expect(reply.body).toBe("POST /token?x=1 grant_type=client_credentials");
    expect(reply.headers["content-length"]).toBe(String(reply.body.length));
    expect(reply.headers["transfer-encoding"]).toBeUndefined();
  });

  it("refuses a body over the limit with 413 while the client is still sending", async () => {
    const port = await serve(handleApp(async (req) => text(await req.text(1024))));
    const reply = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpRequest({ host: "127.0.0.1", port, path: "/", method: "POST", agent: false }, resolve);
      req.on("error", reject);
      req.write("x".repeat(2048)); // chunked, no Content-Length, and never ended
    });
    reply.destroy();
    expect(reply.statusCode).toBe(413);
    expect(reply.headers.connection).toBe("close");
  });

  it("caps every body at maxBodyBytes, whatever limit the app asks for", async () => {
    const port = await serve(handleApp(async (req) => text(await req.text(1_000_000))), { maxBodyBytes: 100 });
    expect((await send(port, "/", { method: "POST", body: "x".repeat(100) })).status).toBe(200);
    expect((await send(port, "/", { method: "POST", body: "x".repeat(101) })).status).toBe(413);
  });

  it("refuses a huge declared Content-Length without waiting for the body", async () => {
    const port = await serve(handleApp(async (req) => text(await req.text(1024))));
    const started = Date.now();
    const answer = await raw(port, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10000000000\r\n\r\nabc");
    expect(answer).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("joins repeated request headers, even those Node keeps only once", async () => {
    const port = await serve(handleApp((req) =>
      text(JSON.stringify([req.header("x-multi"), req.header("Authorization"), req.header("x-absent")]))
    ));
    const answer = await raw(
      port,
      "GET / HTTP/1.1\r\nHost: a\r\nX-Multi: a\r\nx-multi: b\r\nAuthorization: Basic one\r\n" +
        "Authorization: Basic two\r\nConnection: close\r\n\r\n",
    );
    expect(answer.slice(answer.indexOf("\r\n\r\n") + 4)).toBe('["a, b","Basic one, Basic two",null]');
  });

  it("gives toRequest() the body that text() already read, and the body to text() after toRequest()", async () => {
    const port = await serve(
      handleApp(async (req) => {
        if (req.target === "/text-first") {
          const first = await req.text(1000);
          const request = req.toRequest();
          return text(`${first}|${await request.text()}|${request.method} ${request.url}`);
        }
        const request = req.toRequest();
        const first = await request.text();
        return text(`${first}|${await req.text(1000)}|${request.headers.get("x-custom")}`);
      }),
      { origin: "https://auth.example.com/" },
    );
    const a = await send(port, "/text-first", { method: "POST", body: "a=1" });
    expect(a.body).toBe("a=1|a=1|POST https://auth.example.com/text-first");
    const b = await send(port, "/request-first", { method: "POST", body: "b=2", headers: { "x-custom": "yes" } });
    expect(b.body).toBe("b=2|b=2|yes");
  });

  it("builds the toRequest() URL from the Host header when no origin is set", async () => {
    const port = await serve(handleApp((req) => text(req.toRequest().url)));
    expect((await send(port, "/p?q=1")).body).toBe(`http://127.0.0.1:${port}/p?q=1`);
  });

  it("decodes a body that came with its head as one that trickles in: UTF-8, bad bytes and a BOM alike", async () => {
    const port = await serve(handleApp(async (req) => text(JSON.stringify(await req.text(1000)))));
    // A leading BOM is dropped and bad bytes become U+FFFD, as TextDecoder (and so a real Request) does it.
    const bodies = [[0xef, 0xbb, 0xbf, 0x61, 0x3d, 0x31], [0x61, 0x3d, 0xc3, 0xa9, 0xff, 0xe2, 0x82], [0x62, 0xef, 0xbb, 0xbf]];
    for (const bytes of bodies) {
      const body = Buffer.from(bytes);
      const head = `POST / HTTP/1.1\r\nHost: a\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
      const expected = JSON.stringify(new TextDecoder().decode(body));
      for (const split of [false, true]) {
        const answer = await new Promise<string>((resolve, reject) => {
          const socket = connect(port, "127.0.0.1");
          let received = "";
          socket.setEncoding("utf8");
          socket.on("data", (chunk: string) => (received += chunk));
          socket.on("end", () => resolve(received));
          socket.on("error", reject);
          if (!split) socket.write(Buffer.concat([Buffer.from(head), body]));
          else socket.write(head, () => setTimeout(() => socket.write(body), 50));
        });
        expect(answer.slice(answer.indexOf("\r\n\r\n") + 4), `${bytes.join(",")} split=${split}`).toBe(expected);
      }
    }
  });

  it("gives back what read() returned when it is not the whole body, and reads it all the usual way", async () => {
    // A node:http of another runtime whose read() hands over less than it says it holds.
    const body = Buffer.from("a=1&b=2");
    let buffered: Buffer = body;
    const req = Object.assign(new EventEmitter(), {
      method: "POST",
      url: "/",
      headers: { host: "a", "content-length": String(body.length) },
      rawHeaders: ["Host", "a", "Content-Length", String(body.length)],
      socket: { remoteAddress: "127.0.0.1" },
      readableFlowing: null,
      get readableLength() {
        return buffered.length;
      },
      read: () => {
        const chunk = buffered.subarray(0, 3);
        buffered = buffered.subarray(3);
        return chunk;
      },
      unshift: (chunk: Buffer) => void (buffered = Buffer.concat([chunk, buffered])),
      pause: () => {},
      resume: () => {},
    });
    req.on("newListener", (event: string) => {
      if (event === "end") setImmediate(() => (req.emit("data", buffered), req.emit("end")));
    });
    const sent = await new Promise<string>((resolve) => {
      const res = {
        headersSent: false,
        destroyed: false,
        writeHead: () => {},
        setHeader: () => {},
        appendHeader: () => {},
        write: () => true,
        end: (chunk?: string) => resolve(String(chunk)),
        destroy: () => {},
        on: () => {},
        removeListener: () => {},
      };
      toNodeListener(handleApp(async (view) => text(await view.text(1000))))(req as unknown as NodeIncomingMessage, res);
    });
    expect(sent).toBe("a=1&b=2");
  });

  it("refuses a body over the app's limit with 413 even when all of it came with the head", async () => {
    const port = await serve(handleApp(async (req) => text(await req.text(1024))));
    expect((await send(port, "/", { method: "POST", body: "x".repeat(1024) })).status).toBe(200);
    const answer = await raw(port, `POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1025\r\n\r\n${"x".repeat(1025)}`);
    expect(answer).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
  });

  it("reports the peer address, or the one clientAddress picks", async () => {
    const app = handleApp((req) => text(String(req.remoteAddress)));
    expect((await send(await serve(app), "/")).body).toBe("127.0.0.1");
    const proxied = await serve(app, { clientAddress: (req) => String(req.headers["x-forwarded-for"]) });
    expect((await send(proxied, "/", { headers: { "x-forwarded-for": "203.0.113.7" } })).body).toBe("203.0.113.7");
  });
});

describe("toNodeListener: responses", () => {
  const cookies: [string, string][] = [["set-cookie", "a=1; HttpOnly"], ["set-cookie", "b=2; Secure"]];

  it("keeps several Set-Cookie headers from handle and from fetch", async () => {
    const viaHandle = await serve(handleApp(() => text("ok", 200, cookies)));
    expect((await send(viaHandle, "/")).headers["set-cookie"]).toEqual(["a=1; HttpOnly", "b=2; Secure"]);
    const viaFetch = await serve({ fetch: () => Promise.resolve(new Response("ok", { headers: cookies })) });
    expect((await send(viaFetch, "/")).headers["set-cookie"]).toEqual(["a=1; HttpOnly", "b=2; Secure"]);
  });

  it("sends headers but no body to HEAD, from handle and from fetch", async () => {
    const head = "HEAD / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    const viaHandle = await raw(await serve(handleApp(() => text("hello"))), head);
    expect(viaHandle).toMatch(/\r\ncontent-length: 5\r\n/i);
    expect(viaHandle.endsWith("\r\n\r\n")).toBe(true);
    let cancelled = false;
    const stream = new ReadableStream({
      pull: async (controller) => {
        await tick(); // an endless body that still lets the event loop turn, so a bug fails instead of hanging
        controller.enqueue(new Uint8Array(10));
      },
      cancel: () => void (cancelled = true),
    });
    const viaFetch = await raw(await serve({ fetch: () => Promise.resolve(new Response(stream)) }), head);
    expect(viaFetch).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(viaFetch.endsWith("\r\n\r\n")).toBe(true);
    expect(cancelled).toBe(true);
  });

  it("streams a passthrough Response chunk by chunk, with its status text or the standard one", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const port = await serve(handleApp((req) => {
      if (req.target === "/created") return passthrough(new Response(null, { status: 201 }));
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode("one,"));
          await released; // the client must see "one," before the stream goes on
          controller.enqueue(new TextEncoder().encode("two"));
          controller.close();
        },
      });
      return passthrough(new Response(body, { status: 418, statusText: "Short And Stout" }));
    }));
    const reply = await new Promise<Reply>((resolve, reject) => {
      httpRequest({ host: "127.0.0.1", port, path: "/", agent: false }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
          if (body === "one,") release();
        });
        res.on("end", () => resolve({ status: res.statusCode!, statusMessage: res.statusMessage!, headers: {}, body }));
      }).on("error", reject).end();
    });
    expect(reply).toMatchObject({ status: 418, statusMessage: "Short And Stout", body: "one,two" });
    expect(await send(port, "/created")).toMatchObject({ status: 201, statusMessage: "Created", body: "" });
  });

  it("stops pulling a stream while the client does not read (backpressure)", async () => {
    let pulled = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await tick();
        pulled += 65536;
        controller.enqueue(new Uint8Array(65536));
      },
    }, { highWaterMark: 0 });
    const port = await serve({ fetch: () => Promise.resolve(new Response(body)) });
    const res = await new Promise<IncomingMessage>((resolve) =>
      httpRequest({ host: "127.0.0.1", port, path: "/", agent: false }, resolve).end()
    );
    res.pause();
    await delay(300);
    const stalled = pulled;
    await delay(200);
    expect(pulled).toBe(stalled); // no more pulls while the socket is full
    expect(pulled).toBeLessThan(64 * 1024 * 1024);
    res.destroy();
  });

  it("cancels the stream when the client aborts, without an unhandled rejection", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    const errors: unknown[] = [];
    let cancelled!: () => void;
    const wasCancelled = new Promise<void>((resolve) => (cancelled = resolve));
    try {
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          await delay(5);
          controller.enqueue(new Uint8Array(1024));
        },
        cancel: () => cancelled(),
      });
      const onError = (error: unknown): void => void errors.push(error);
      const port = await serve(handleApp(() => passthrough(new Response(body))), { onError });
      const req = httpRequest({ host: "127.0.0.1", port, path: "/", agent: false }, (res) => {
        res.once("data", () => req.destroy());
      });
      req.on("error", () => {});
      req.end();
      await wasCancelled;
      await delay(50);
      expect(errors).toEqual([]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("answers a thrown error with a generic 500 and gives the details to onError", async () => {
    const errors: unknown[] = [];
    const onError = (error: unknown): void => void errors.push(error);
    const secret = new Error("database password is hunter2");
    const expected = { status: 500, body: '{"error":"server_error"}' };
    const viaHandle = await serve(handleApp(() => Promise.reject(secret)), { onError });
    expect(await send(viaHandle, "/")).toMatchObject(expected);
    const viaFetch = await serve({ fetch: () => { throw secret; } }, { onError });
    const reply = await send(viaFetch, "/");
    expect(reply).toMatchObject(expected);
    expect(reply.headers["content-type"]).toBe("application/json;charset=UTF-8");
    const clientAddress = (): string => {
      throw secret;
    };
    const failingOption = await serve(handleApp(() => text("unreached")), { onError, clientAddress });
    expect(await send(failingOption, "/")).toMatchObject(expected);
    expect(errors).toEqual([secret, secret, secret]);
  });
});

describe("toNodeListener: as middleware", () => {
  type Middleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;
  /** A connect-like chain: each middleware gets `next`, the last one ends the response. */
  const chain = (...stack: Middleware[]): Listener => (req, res) => {
    let index = 0;
    const next = (): void => stack[index++]!(req, res, next);
    next();
  };
  const poweredBy: Middleware = (_req, res, next) => {
    res.setHeader("x-powered-by", "chain");
    next();
  };
  const fallback: Middleware = (req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => res.end(`fallback ${req.url} ${body}`));
  };
  let calls = 0;
  const app = handleApp((req) => {
    calls++;
    if (req.target === "/token") return text("token", 200, [["set-cookie", "a=1"], ["set-cookie", "b=2"]]);
    if (req.target === "/gone") return { status: 404, headers: [], body: '{"error":"no_such_thing"}' };
    return { status: 404, headers: [], body: null }; // what the core's router answers for a path it does not serve
  });

  it("passes an unrouted 404 to next() with the body untouched, and answers its own routes", async () => {
    const port = await listen(chain(poweredBy, toNodeListener(app), fallback));
    expect((await send(port, "/elsewhere", { method: "POST", body: "kept" })).body).toBe("fallback /elsewhere kept");
    const own = await send(port, "/token");
    expect(own.body).toBe("token");
    expect(own.headers["set-cookie"]).toEqual(["a=1", "b=2"]);
    expect(own.headers["x-powered-by"]).toBe("chain");
    expect(await send(port, "/gone")).toMatchObject({ status: 404, body: '{"error":"no_such_thing"}' });
  });

  it("with owns, does not call the app for other paths", async () => {
    calls = 0;
    const mw = toNodeListener(app, { owns: (path) => path === "/token" || path === "/missing" });
    const port = await listen(chain(poweredBy, mw, fallback));
    expect((await send(port, "/elsewhere?x=1")).body).toBe("fallback /elsewhere?x=1 ");
    expect(calls).toBe(0);
    expect((await send(port, "/missing")).status).toBe(404); // owned: its 404 is the answer
    expect(calls).toBe(1);
  });
});

describe("serveNode", () => {
  const slowApp = handleApp(async (req) => {
    if (req.target === "/slow") await delay(300);
    return text("ok");
  });

  it("closes promptly while a keep-alive connection is idle", async () => {
    const served = await serveNode(slowApp, { port: 0 });
    const agent = new Agent({ keepAlive: true });
    try {
      const reply = await send(served.port, "/", { agent });
      expect(reply.headers.connection).toBe("keep-alive");
      expect(served.url).toBe(`http://127.0.0.1:${served.port}`);
      const started = Date.now();
      await served.close();
      expect(Date.now() - started).toBeLessThan(1000); // not the 5 s keep-alive timeout
      expect(served.server.listening).toBe(false);
    } finally {
      agent.destroy();
    }
  });

  it("lets a request in flight finish, then closes its connection", async () => {
    const served = await serveNode(slowApp, { port: 0 });
    const agent = new Agent({ keepAlive: true });
    try {
      const inFlight = send(served.port, "/slow", { agent });
      await delay(100);
      const started = Date.now();
      const closed = served.close();
      const reply = await inFlight;
      expect(reply).toMatchObject({ status: 200, body: "ok" });
      expect(reply.headers.connection).toBe("close");
      await closed;
      expect(Date.now() - started).toBeLessThan(1500);
      await expect(send(served.port, "/")).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      agent.destroy();
    }
  });

  it("still knows a request in flight after hundreds of others came and went", async () => {
    let release = (): void => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const served = await serveNode(handleApp(async (req) => {
      if (req.target === "/hold") await held;
      return text("ok");
    }), { port: 0 });
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    try {
      const inFlight = send(served.port, "/hold", { agent });
      await delay(20);
      // Finished responses are swept out of the in-flight set as it fills; the held one must stay in it.
      for (let i = 0; i < 300; i++) expect((await send(served.port, "/", { agent })).status).toBe(200);
      const closed = served.close();
      release();
      const reply = await inFlight;
      expect(reply.headers.connection).toBe("close");
      await closed;
    } finally {
      agent.destroy();
    }
  });

  it("closes when its signal aborts", async () => {
    const controller = new AbortController();
    const served = await serveNode(slowApp, { port: 0, signal: controller.signal });
    expect((await send(served.port, "/")).body).toBe("ok");
    controller.abort();
    expect(served.server.listening).toBe(false);
    await served.close(); // the same close, already under way
  });
});
