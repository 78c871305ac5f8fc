/**
 * The request half of the Node adapter: an {@link HttpRequest} read straight from a Node `IncomingMessage`,
 * with no WHATWG object unless a hook asks for one.
 *
 * @module
 */
import { OAuthError } from "../errors.ts";
import type { HttpRequest } from "../http.ts";

/**
 * The part of Node's `http.IncomingMessage` the adapter uses. Structural, so the core needs no `@types/node`;
 * a real `IncomingMessage` (or an Express `req`) fits it.
 */
export interface NodeIncomingMessage {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  /** Lower-case names; Node joins most repeats with `, `, keeps `set-cookie` as an array and drops some. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Every header as Node received it, repeats kept (Node 18.3+). */
  readonly headersDistinct?: Readonly<Record<string, string[] | undefined>>;
  /** Names and values in turn, as received. */
  readonly rawHeaders: readonly string[];
  readonly socket: { readonly remoteAddress?: string | undefined; readonly encrypted?: boolean };
  /** True once the body was read to the end, e.g. by an earlier body-parsing middleware. */
  readonly readableEnded?: boolean;
  readonly destroyed?: boolean;
  on(event: string, listener: (...args: never[]) => void): unknown;
  removeListener(event: string, listener: (...args: never[]) => void): unknown;
  pause(): unknown;
}

const TOO_LARGE = (): OAuthError =>
  new OAuthError("invalid_request", { description: "Request body is too large", status: 413 });

const EMPTY: Promise<Uint8Array> = Promise.resolve(new Uint8Array(0));
const decoder = new TextDecoder();

/**
 * An {@link HttpRequest} over a Node request. The body is read at most once, by whichever of `text()` or
 * the `Request` from `toRequest()` asks first, and kept, so the other still sees it.
 */
export class NodeHttpRequest implements HttpRequest {
  readonly method: string;
  readonly target: string;
  /** Set by the adapter right after construction, from the socket or its `clientAddress` option. */
  remoteAddress: string | undefined = undefined;
  /** The body was refused as too large: the connection must close rather than drain the rest of it. */
  refused: boolean = false;
  readonly #req: NodeIncomingMessage;
  readonly #maxBodyBytes: number;
  readonly #origin: string | undefined;
  #body: Promise<Uint8Array> | undefined;
  #bytes: Uint8Array | undefined;
  #request: Request | undefined;

  constructor(req: NodeIncomingMessage, maxBodyBytes: number, origin?: string) {
    this.method = req.method ?? "GET";
    this.target = req.url ?? "/";
    this.#req = req;
    this.#maxBodyBytes = maxBodyBytes;
    this.#origin = origin;
  }

  /** Whether anything started reading the body (it is then gone for a next middleware). */
  get bodyTouched(): boolean {
    return this.#body !== undefined;
  }

  header(name: string): string | null {
    // Every repeat, joined, so that `Authorization` sent twice reads "a, b" as it does through fetch, instead
    // of Node's silent first-wins for that header. Read from rawHeaders: scanning a handful of pairs costs less
    // than the `headersDistinct` object Node would build for it.
    const raw = this.#req.rawHeaders;
    const wanted = name.toLowerCase();
    let value: string | null = null;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const key = raw[i]!;
      if (key.length === wanted.length && (key === wanted || key.toLowerCase() === wanted)) {
        value = value === null ? raw[i + 1]! : `${value}, ${raw[i + 1]!}`;
      }
    }
    return value;
  }

  text(limit: number): Promise<string> {
    return this.#read(Math.min(limit, this.#maxBodyBytes)).then((bytes) => {
      if (bytes.byteLength > limit) throw TOO_LARGE();
      return decoder.decode(bytes);
    });
  }

  toRequest(): Request {
    if (this.#request !== undefined) return this.#request;
    const raw = this.#req.rawHeaders;
    const headers = new Headers();
    for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
    const init: RequestInit & { duplex?: "half" } = { method: this.method, headers };
    if (this.method !== "GET" && this.method !== "HEAD" && hasBody(this.#req)) {
      if (this.#bytes !== undefined) {
        init.body = this.#bytes as Uint8Array<ArrayBuffer>;
      } else {
        // Pulled only when someone reads it (highWaterMark 0), and through the same cached read as text().
        init.body = new ReadableStream<Uint8Array>({
          pull: (controller) =>
            this.#read(this.#maxBodyBytes).then((bytes) => {
              if (bytes.byteLength > 0) controller.enqueue(bytes);
              controller.close();
            }),
        }, { highWaterMark: 0 });
        init.duplex = "half";
      }
    }
    return (this.#request = new Request(this.#url(), init));
  }

  #read(limit: number): Promise<Uint8Array> {
    if (this.#body === undefined) {
      this.#body = readBody(this, this.#req, limit).then((bytes) => (this.#bytes = bytes));
    }
    return this.#body;
  }

  /** An absolute URL: the configured origin, else the Host header, which a client controls. */
  #url(): string {
    let origin = this.#origin;
    if (origin === undefined) {
      const host = this.#req.headers.host;
      const scheme = this.#req.socket.encrypted ? "https://" : "http://";
      origin = scheme + (typeof host === "string" && host !== "" ? host : "localhost");
    }
    const path = this.target.startsWith("/") ? this.target : "/";
    return URL.canParse(origin + path) ? origin + path : "http://localhost/";
  }
}

function hasBody(req: NodeIncomingMessage): boolean {
  const length = req.headers["content-length"];
  return (length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined;
}

/** Reads the whole body, failing with 413 as soon as it passes `limit` bytes, declared or sent. */
function readBody(self: NodeHttpRequest, req: NodeIncomingMessage, limit: number): Promise<Uint8Array> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && !(Number(declared) <= limit)) {
    self.refused = true;
    return Promise.reject(TOO_LARGE());
  }
  if (!hasBody(req)) return EMPTY;
  if (req.readableEnded) {
    return Promise.reject(new Error("Cannot read the request body: an earlier middleware already consumed it"));
  }
  if (req.destroyed) return Promise.reject(new Error("Cannot read the request body: the client went away"));
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const stop = (): void => {
      req.removeListener("data", onData);
      req.removeListener("end", onEnd);
      req.removeListener("error", onFail);
      req.removeListener("close", onFail);
    };
    const onData = (chunk: Uint8Array): void => {
      size += chunk.byteLength;
      if (size > limit) {
        stop();
        req.pause(); // let TCP push back; the 413 goes out with `Connection: close`
        self.refused = true;
        reject(TOO_LARGE());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      stop();
      resolve(concat(chunks, size));
    };
    // "close" before "end": the client went away mid-body.
    const onFail = (error?: Error): void => {
      stop();
      reject(error ?? new Error("Cannot read the request body: the client went away"));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onFail);
    req.on("close", onFail);
  });
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return all;
}
