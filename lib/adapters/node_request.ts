/**
 * The request half of the Node adapter: a WHATWG `Request` over a Node `IncomingMessage` that builds the real
 * one only when something reads past what the core reads (method, URL, headers, body text), as
 * @hono/node-server does. `instanceof Request` holds, and every other member works, at the price of the real
 * object. It also marks itself as accepting a lazy `Response` (see `lib/http.ts`).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { BODY_TEXT, LAZY, MATERIALIZE, standIn, tooLarge } from "../http.ts";
/**
 * The part of Node's `http.IncomingMessage` the adapter uses. Structural, so the core needs no `@types/node`;
 * a real `IncomingMessage` (or an Express `req`) fits it.
 */
export interface NodeIncomingMessage {
  /** The request method, as received. */
  readonly method?: string | undefined;
  /** The request target, as received: origin form, or absolute form through a proxy. */
  readonly url?: string | undefined;
  /** Lower-case names; Node joins most repeats with `, `, keeps `set-cookie` as an array and drops some. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Every header as Node received it, repeats kept (Node 18.3+). */
  readonly headersDistinct?: Readonly<Record<string, string[] | undefined>>;
  /** Names and values in turn, as received. */
  readonly rawHeaders: readonly string[];
  /** The connection: the peer's address, and whether it is TLS. */
  readonly socket: { readonly remoteAddress?: string | undefined; readonly encrypted?: boolean };
  /** Bytes waiting in the stream's buffer. */
  readonly readableLength?: number;
  /** Null until something reads, true while flowing to "data" listeners. */
  readonly readableFlowing?: boolean | null;
  /** True once the body was read to the end, e.g. by an earlier body-parsing middleware. */
  readonly readableEnded?: boolean;
  /** True once the stream was torn down (the client went away, or a body was refused). */
  readonly destroyed?: boolean;
  /** Adds a stream listener (`"data"`, `"end"`, `"error"`, `"close"`). */
  on(event: string, listener: (...args: never[]) => void): unknown;
  /** Removes a listener added with `on`. */
  removeListener(event: string, listener: (...args: never[]) => void): unknown;
  /** Stops the flow of `"data"` events, so the body is read at the adapter's pace. */
  pause(): unknown;
  /** Restarts the flow of `"data"` events. */
  resume?(): unknown;
  /** What is buffered, at once (paused mode). */
  read?(): unknown;
  /** Puts a chunk taken by `read()` back in front of the buffer. */
  unshift?(chunk: Uint8Array | string): unknown;
}

const EMPTY_BYTES = new Uint8Array(0);
const EMPTY: Promise<Uint8Array> = Promise.resolve(EMPTY_BYTES);
const decoder = new TextDecoder();

/**
 * UTF-8 to text as `TextDecoder` does it (both end in V8's decoder, so bad bytes become the same U+FFFD), BOM
 * dropped as `TextDecoder` drops it; through `Buffer`, which skips the decoder's per-call argument checks.
 */
function utf8(bytes: Uint8Array): string {
  if (!Buffer.isBuffer(bytes)) return decoder.decode(bytes);
  const text = bytes.toString("utf8");
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** What the adapter reads of its own requests besides the `Request` members. */
export interface NodeRequestState {
  /** The request target as Node received it, e.g. `/token?x=1`. */
  readonly target: string;
  /** The body was refused as too large: the connection must close rather than drain the rest of it. */
  readonly refused: boolean;
  /** Whether anything started reading the body (it is then gone for a next middleware). */
  readonly bodyTouched: boolean;
}

/** A `Request` over a Node request, built for real only when something reads past what the core reads. */
export function nodeRequest(req: NodeIncomingMessage, maxBodyBytes: number, origin?: string): Request & NodeRequestState {
  return new NodeRequest(req, maxBodyBytes, origin) as unknown as Request & NodeRequestState;
}

/**
 * {@link nodeRequest}'s class. The body is read at most once, by whichever of `text()`, `arrayBuffer()` or
 * the real `Request`'s stream asks first, and kept, so the others still see it.
 */
class NodeRequest {
  readonly method: string;
  /** The request target as Node received it, e.g. `/token?x=1`. */
  readonly target: string;
  /** The body was refused as too large: the connection must close rather than drain the rest of it. */
  refused: boolean = false;
  readonly #req: NodeIncomingMessage;
  readonly #maxBodyBytes: number;
  readonly #origin: string | undefined;
  #url: string | undefined;
  #headers: NodeHeaders | undefined;
  #body: Promise<Uint8Array> | undefined;
  #bytes: Uint8Array | undefined;
  #real: Request | undefined;

  constructor(req: NodeIncomingMessage, maxBodyBytes: number, origin?: string) {
    this.method = req.method ?? "GET";
    this.target = req.url ?? "/";
    this.#req = req;
    this.#maxBodyBytes = maxBodyBytes;
    this.#origin = origin;
  }

  /** Whether anything started reading the body (it is then gone for a next middleware). */
  get bodyTouched(): boolean {
    return this.#body !== undefined || this.#bytes !== undefined;
  }

  /** An absolute URL: the configured origin, else the Host header, which a client controls. */
  get url(): string {
    if (this.#url !== undefined) return this.#url;
    let origin = this.#origin;
    if (origin === undefined) {
      const host = this.#req.headers.host;
      const scheme = this.#req.socket.encrypted ? "https://" : "http://";
      origin = scheme + (typeof host === "string" && host !== "" && !/[/?#@\\\s]/.test(host) ? host : "localhost");
    }
    const path = this.target.startsWith("/") ? this.target : "/";
    return (this.#url = origin + path);
  }

  get headers(): Headers {
    return (this.#headers ??= new NodeHeaders(this.#req.rawHeaders)) as unknown as Headers;
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#real === undefined && (this.method === "GET" || this.method === "HEAD" || !hasBody(this.#req))) return null;
    return this[MATERIALIZE]().body;
  }

  get bodyUsed(): boolean {
    return this.bodyTouched || (this.#real?.bodyUsed ?? false);
  }

  text(): Promise<string> {
    if (this.#real !== undefined) return this.#real.text();
    return this.#read().then((bytes) => decoder.decode(bytes));
  }

  /**
   * The body as text when all of it is buffered already (a small form arrives with its headers): taken
   * from the stream's buffer in one `read()`, with no listener, promise or deadline. Undefined when any byte
   * may still be on its way, when it is chunked, over a limit, or already being read: then the usual path reads
   * it (and answers 413, or waits with its deadline).
   */
  [BODY_TEXT](limit: number): string | undefined {
    if (this.#real !== undefined || this.#body !== undefined || this.#bytes !== undefined) return undefined;
    const req = this.#req;
    const declared = req.headers["content-length"];
    if (declared === undefined || req.headers["transfer-encoding"] !== undefined) return undefined;
    const length = Number(declared);
    if (!(length <= limit && length <= this.#maxBodyBytes)) return undefined;
    if (length === 0) {
      this.#bytes = EMPTY_BYTES;
      return "";
    }
    // Content-Length framing: the parser hands this request exactly that many bytes, so once they are all
    // buffered the body is complete (Node may not have marked it so yet). Nothing flowing: one read() then
    // returns exactly these bytes (in flowing mode it would return only the first chunk).
    if (req.readableLength !== length || req.readableFlowing === true || req.readableEnded || req.destroyed) return undefined;
    const chunk = req.read?.();
    if (!(chunk instanceof Uint8Array) || chunk.byteLength !== length) {
      // Not what a paused Node stream holding the whole body returns (another runtime's node:http may differ):
      // give it back, and let the usual path read it all.
      if (chunk !== null && chunk !== undefined) req.unshift?.(chunk as Uint8Array | string);
      return undefined;
    }
    this.#bytes = chunk;
    return utf8(chunk);
  }

  bytes(): Promise<Uint8Array<ArrayBuffer>> {
    if (this.#real !== undefined) return this.#real.bytes();
    return this.#read() as Promise<Uint8Array<ArrayBuffer>>;
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    if (this.#real !== undefined) return this.#real.arrayBuffer();
    return this.#read().then((bytes) => bytes.slice().buffer);
  }

  [MATERIALIZE](): Request {
    if (this.#real !== undefined) return this.#real;
    const headers = (this.#headers ??= new NodeHeaders(this.#req.rawHeaders))[MATERIALIZE]();
    const init: RequestInit & { duplex?: "half" } = { method: this.method, headers };
    if (this.method !== "GET" && this.method !== "HEAD" && hasBody(this.#req)) {
      if (this.#bytes !== undefined) {
        init.body = this.#bytes as Uint8Array<ArrayBuffer>;
      } else if (this.#body !== undefined) {
        // A read is under way: its result, as one chunk.
        const body = this.#body;
        init.body = new ReadableStream<Uint8Array>({
          pull: (controller) =>
            body.then((bytes) => {
              if (bytes.byteLength > 0) controller.enqueue(bytes);
              controller.close();
            }),
        }, { highWaterMark: 0 });
        init.duplex = "half";
      } else {
        // Chunk by chunk as they arrive, so a reader with a smaller limit can stop early (and cancel).
        this.#body = EMPTY; // touched: a next middleware can no longer have it
        init.body = streamBody(this, this.#req, this.#maxBodyBytes);
        init.duplex = "half";
      }
    }
    const url = URL.canParse(this.url) ? this.url : "http://localhost/";
    return (this.#real = new Request(url, init));
  }

  #read(): Promise<Uint8Array> {
    if (this.#body === undefined && this.#bytes !== undefined) this.#body = Promise.resolve(this.#bytes);
    if (this.#body === undefined) {
      this.#body = readBody(this, this.#req, this.#maxBodyBytes).then((bytes) => (this.#bytes = bytes));
    }
    return this.#body;
  }
}
Object.defineProperty(NodeRequest.prototype, LAZY, { value: true });
standIn(NodeRequest.prototype, Request.prototype);

/** `Headers` over Node's raw header list; `get` and `has` read it directly, the rest builds real `Headers`. */
class NodeHeaders {
  readonly #raw: readonly string[];
  #real: Headers | undefined;

  constructor(raw: readonly string[]) {
    this.#raw = raw;
  }

  get(name: string): string | null {
    // Every repeat, joined, as `Headers` does (so `Authorization` sent twice reads "a, b", not Node's silent
    // first-wins). A scan of a handful of pairs costs less than the objects Node would build for it.
    const raw = this.#raw;
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

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  [MATERIALIZE](): Headers {
    if (this.#real !== undefined) return this.#real;
    const headers = new Headers();
    for (let i = 0; i + 1 < this.#raw.length; i += 2) headers.append(this.#raw[i]!, this.#raw[i + 1]!);
    return (this.#real = headers);
  }
}
standIn(NodeHeaders.prototype, Headers.prototype);

function hasBody(req: NodeIncomingMessage): boolean {
  const length = req.headers["content-length"];
  return (length !== undefined && length !== "0") || req.headers["transfer-encoding"] !== undefined;
}

/** Reads the whole body, failing with 413 as soon as it passes `limit` bytes, declared or sent. */
function readBody(self: NodeRequest, req: NodeIncomingMessage, limit: number): Promise<Uint8Array> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && !(Number(declared) <= limit)) {
    self.refused = true;
    return Promise.reject(tooLarge());
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
        reject(tooLarge());
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

/** The body as a stream of Node's chunks, failing with 413 past `limit`; cancelling stops reading. */
function streamBody(self: NodeRequest, req: NodeIncomingMessage, limit: number): ReadableStream<Uint8Array> {
  let stop = (): void => {};
  return new ReadableStream<Uint8Array>({
    start(controller) {
      if (req.readableEnded || req.destroyed) {
        controller.error(new Error("Cannot read the request body: it is no longer available"));
        return;
      }
      let size = 0;
      const onData = (chunk: Uint8Array): void => {
        size += chunk.byteLength;
        if (size > limit) {
          stop();
          self.refused = true;
          controller.error(tooLarge());
          return;
        }
        controller.enqueue(chunk);
        if ((controller.desiredSize ?? 0) <= 0) req.pause();
      };
      const onEnd = (): void => {
        stop();
        controller.close();
      };
      const onFail = (error?: Error): void => {
        stop();
        controller.error(error ?? new Error("Cannot read the request body: the client went away"));
      };
      stop = () => {
        req.removeListener("data", onData);
        req.removeListener("end", onEnd);
        req.removeListener("error", onFail);
        req.removeListener("close", onFail);
        req.pause();
      };
      req.on("data", onData);
      req.on("end", onEnd);
      req.on("error", onFail);
      req.on("close", onFail);
    },
    pull() {
      req.resume?.();
    },
    cancel() {
      // The rest stays unread: the connection must close rather than drain it.
      stop();
      self.refused = true;
    },
  }, { highWaterMark: 1 });
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
