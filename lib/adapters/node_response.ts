/**
 * The response half of the Node adapter: writes the core's {@link ResponseParts} or a WHATWG `Response` to a Node
 * `ServerResponse`, streaming with backpressure and stopping cleanly when the client goes away.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type { ResponseParts } from "../http.ts";

/** The part of Node's `http.ServerResponse` the adapter uses (structural, so no `@types/node` is needed). */
export interface NodeServerResponse {
  /** True once the status line and headers went out. */
  readonly headersSent: boolean;
  /** True once the response was torn down, e.g. because the client went away. */
  readonly destroyed: boolean;
  /** Sends the status line and a flat list of header names and values (repeats kept). */
  writeHead(status: number, headers?: string[]): unknown;
  /** Sends the status line with its reason phrase, and the headers. */
  writeHead(status: number, statusMessage: string, headers?: string[]): unknown;
  /** Sets a header before `writeHead` (middleware mode), replacing one of the same name. */
  setHeader(name: string, value: string): unknown;
  /** Adds a value to a header before `writeHead` (a repeated `Set-Cookie`). */
  appendHeader(name: string, value: string): unknown;
  /** Writes a body chunk; false when the socket's buffer is full (wait for `"drain"`). */
  write(chunk: Uint8Array): boolean;
  /** Ends the response, with a last chunk if given. */
  end(chunk?: string): unknown;
  /** Cuts the connection. */
  destroy(error?: Error): unknown;
  /** Adds a listener (`"close"`, `"drain"`, `"finish"`). */
  on(event: string, listener: () => void): unknown;
  /** Removes a listener added with `on`. */
  removeListener(event: string, listener: () => void): unknown;
}

/** How to write: `head` drops the body, `close` ends the connection, `merge` keeps headers set earlier. */
export interface WriteMode {
  head: boolean;
  close: boolean;
  /**
   * Middleware mode: an earlier middleware may have called `setHeader`, and Node's `writeHead` then merges
   * a flat header list with `setHeader`, which keeps only the last of repeated names (a lost `Set-Cookie`).
   */
  merge: boolean;
}

/** The body of the generic 500: nothing about the failure reaches the client. */
const SERVER_ERROR = '{"error":"server_error"}';

/** Writes the parts of a lazy response: one `writeHead`, one `end`. */
export function writeParts(res: NodeServerResponse, response: ResponseParts, mode: WriteMode): void {
  const { status, body } = response;
  const flat: string[] = [];
  let sized = false;
  for (const [name, value] of response.headers) {
    if (name.length === 14 && name.toLowerCase() === "content-length") sized = true;
    flat.push(name, value);
  }
  // Sized, not chunked: writeHead fixes the framing before end() could measure the body.
  if (!sized && status >= 200 && status !== 204 && status !== 304) {
    flat.push("content-length", body === null ? "0" : String(Buffer.byteLength(body)));
  }
  writeHead(res, status, "", flat, mode);
  if (body === null || mode.head) res.end();
  else res.end(body);
}

/** Writes a WHATWG `Response`, streaming its body; resolves when done or when the client went away. */
export function writeFetchResponse(
  res: NodeServerResponse,
  response: Response,
  mode: WriteMode,
  onStreamError: (error: unknown) => void,
): Promise<void> | undefined {
  const flat: string[] = [];
  // Headers iteration yields each Set-Cookie on its own (Fetch standard, "sort and combine").
  for (const [name, value] of response.headers) flat.push(name, value);
  writeHead(res, response.status, response.statusText, flat, mode);
  const body = response.body;
  if (body === null || mode.head || res.destroyed) {
    if (body !== null) body.cancel().catch(ignore);
    res.end();
    return undefined;
  }
  return pipe(res, body, onStreamError);
}

/** The generic 500 for an app that threw; a response already under way is cut instead. */
export function writeServerError(res: NodeServerResponse, mode: WriteMode): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const flat = [
    "content-type",
    "application/json;charset=UTF-8",
    "cache-control",
    "no-store",
    "content-length",
    String(SERVER_ERROR.length),
  ];
  writeHead(res, 500, "", flat, mode);
  res.end(mode.head ? undefined : SERVER_ERROR);
}

function writeHead(res: NodeServerResponse, status: number, text: string, flat: string[], mode: WriteMode): void {
  if (mode.close) flat.push("connection", "close");
  if (mode.merge) {
    // First occurrence replaces what a middleware set; later ones add to it.
    for (let i = 0; i < flat.length; i += 2) {
      const name = flat[i]!.toLowerCase();
      let repeat = false;
      for (let j = 0; j < i && !repeat; j += 2) repeat = flat[j]!.toLowerCase() === name;
      if (repeat) res.appendHeader(name, flat[i + 1]!);
      else res.setHeader(name, flat[i + 1]!);
    }
    if (text === "") res.writeHead(status);
    else res.writeHead(status, text);
  } else if (text === "") {
    res.writeHead(status, flat); // Node fills in the standard reason phrase
  } else {
    res.writeHead(status, text, flat);
  }
}

/**
 * Copies a body stream to `res`, waiting for "drain" when the socket is full. If the client goes away, the
 * stream is cancelled (so its source stops producing) and the copy ends quietly.
 */
async function pipe(
  res: NodeServerResponse,
  body: ReadableStream<Uint8Array>,
  onStreamError: (error: unknown) => void,
): Promise<void> {
  const reader = body.getReader();
  let gone = false;
  let wake: (() => void) | undefined;
  const onClose = (): void => {
    gone = true;
    reader.cancel().catch(ignore); // a pending read() then resolves as done
    wake?.();
  };
  const onDrain = (): void => wake?.();
  res.on("close", onClose);
  res.on("drain", onDrain);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || gone) break;
      if (!res.write(value)) {
        if (res.destroyed) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        if (gone) break;
      }
    }
    if (!gone && !res.destroyed) res.end();
  } catch (error) {
    // The stream failed after the status line went out: all that is left is to cut the connection.
    if (!gone) {
      onStreamError(error);
      res.destroy();
    }
  } finally {
    res.removeListener("close", onClose);
    res.removeListener("drain", onDrain);
    if (gone || res.destroyed) reader.cancel().catch(ignore);
  }
}

function ignore(): void {}
