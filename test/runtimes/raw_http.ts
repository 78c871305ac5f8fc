// Raw HTTP/1.1 over a TCP socket, for requests no HTTP client will send: odd Host headers, absolute-form and
// dot-segment targets, and connections that stall. Vitest on Node only.
import { connect, type Socket } from "node:net";

/** Sends `text` as is and resolves with everything the server sent until it closed, or until `ms` passed. */
export function rawRequest(url: string, text: string, ms = 5_000): Promise<{ status: number; head: string; body: string; closed: boolean }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let data = "";
    let closed = false;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const [head = "", body = ""] = data.split("\r\n\r\n", 2);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, head, body, closed });
    };
    const timer = setTimeout(finish, ms);
    socket.on("data", (chunk) => {
      data += chunk.toString("latin1");
      // One response is enough: stop once its head and declared body are in.
      const end = data.indexOf("\r\n\r\n");
      if (end !== -1) {
        const length = /\r\ncontent-length: *(\d+)/i.exec(data.slice(0, end))?.[1];
        if (length !== undefined && data.length - end - 4 >= Number(length)) finish();
      }
    });
    socket.on("close", () => {
      closed = true;
      finish();
    });
    socket.on("error", () => {});
    socket.write(text);
  });
}

/** Opens a connection, writes `start`, and reports when the server closes it (ms since open), up to `ms`. */
export function stall(url: string, start: string, ms: number, drip?: { every: number; text: string }): Promise<{ closedAfter: number | null; socket: Socket }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const opened = Date.now();
    const socket = connect(Number(port), hostname);
    let dripper: ReturnType<typeof setInterval> | undefined;
    const timer = setTimeout(() => {
      clearInterval(dripper);
      socket.destroy();
      resolve({ closedAfter: null, socket });
    }, ms);
    socket.on("connect", () => {
      if (start !== "") socket.write(start);
      if (drip) {
        let i = 0;
        dripper = setInterval(() => {
          if (!socket.destroyed) socket.write(drip.text[i++ % drip.text.length]!);
        }, drip.every);
      }
    });
    socket.on("data", () => {});
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      clearInterval(dripper);
      resolve({ closedAfter: Date.now() - opened, socket });
    });
  });
}
