/**
 * Trusted reverse proxies: the client's address behind them, for throttles, audit events and logs.
 *
 * Forwarding headers are believed only when the socket's peer is a trusted proxy, and then only up to the
 * first address that is not one: the rightmost untrusted address of `X-Forwarded-For` (or of RFC 7239
 * `Forwarded` when there is no `X-Forwarded-For`). Everything left of it was written by the client and may be
 * forged, so it is never read.
 *
 * @module
 */
import { ConfigurationError } from "./errors.ts";

/** A parsed address: 4 or 16 bytes. */
type Bytes = Uint8Array;

/** A network: its address bytes and prefix length. */
interface Network {
  bytes: Bytes;
  prefix: number;
}

/** The bytes of an IPv4 or IPv6 address (an IPv4-mapped IPv6 address counts as IPv4), or null. */
export function parseIp(text: string): Bytes | null {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) {
    const parts = text.split(".").map(Number);
    return parts.every((p) => p <= 255) ? Uint8Array.from(parts) : null;
  }
  if (!/^[0-9a-fA-F:.]{2,45}$/.test(text) || !text.includes(":")) return null;
  let head = text;
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  if (text.includes(".")) {
    const v4 = parseIp(text.slice(lastColon + 1));
    if (v4 === null || v4.length !== 4) return null;
    head = text.slice(0, lastColon + 1) + "0:0";
    tail = [...v4];
  }
  const halves = head.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    for (const group of part.split(":")) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return null;
      out.push(parseInt(group, 16));
    }
    return out;
  };
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  if (left === null || right === null) return null;
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const words = [...left, ...Array<number>(missing).fill(0), ...right];
  const bytes = new Uint8Array(16);
  words.forEach((w, i) => {
    bytes[2 * i] = w >> 8;
    bytes[2 * i + 1] = w & 0xff;
  });
  if (tail.length === 4) bytes.set(tail, 12);
  // ::ffff:a.b.c.d is how a dual-stack socket reports an IPv4 peer.
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped ? bytes.slice(12) : bytes;
}

/** Parses `address` or `address/prefix`; throws `ConfigurationError` naming the value. */
export function parseNetwork(text: string): Network {
  const slash = text.indexOf("/");
  const bytes = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (bytes === null) throw new ConfigurationError(`Cannot create server: "trustProxy" has a bad address: "${text}"`);
  const max = bytes.length * 8;
  const prefix = slash === -1 ? max : Number(text.slice(slash + 1));
  if (!/^\d+$/.test(slash === -1 ? "0" : text.slice(slash + 1)) || prefix > max) {
    throw new ConfigurationError(`Cannot create server: "trustProxy" has a bad prefix length: "${text}"`);
  }
  return { bytes, prefix };
}

function contains(network: Network, address: Bytes): boolean {
  if (network.bytes.length !== address.length) return false;
  let bits = network.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((network.bytes[i]! & mask) !== (address[i]! & mask)) return false;
  }
  return true;
}

/** The `for=` addresses of RFC 7239 `Forwarded`, left to right, without quotes, brackets or ports. */
function forwardedFor(header: string): string[] {
  const out: string[] = [];
  for (const element of header.split(",")) {
    for (const pair of element.split(";")) {
      const eq = pair.indexOf("=");
      if (eq === -1 || pair.slice(0, eq).trim().toLowerCase() !== "for") continue;
      let value = pair.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
      const bracket = /^\[([^\]]*)\](?::\d+)?$/.exec(value);
      if (bracket) value = bracket[1]!;
      else if (/^[^:]+:\d+$/.test(value)) value = value.slice(0, value.indexOf(":"));
      out.push(value);
    }
  }
  return out;
}

/** A function from the socket's peer and the request's headers to the client's address. */
export type ClientAddressResolver = (peer: string | undefined, header: (name: string) => string | null) => string | undefined;

/**
 * Builds the resolver for the trusted proxies `networks` (addresses or CIDR ranges, IPv4 or IPv6).
 *
 * @example
 * ```ts
 * const resolve = trustedProxies(["10.0.0.0/8"]);
 * resolve("10.0.0.2", (name) => name === "x-forwarded-for" ? "198.51.100.7, 10.0.0.9" : null); // "198.51.100.7"
 * ```
 */
export function trustedProxies(networks: readonly string[]): ClientAddressResolver {
  const parsed = networks.map(parseNetwork);
  const trusted = (address: string): boolean => {
    const bytes = parseIp(address);
    return bytes !== null && parsed.some((n) => contains(n, bytes));
  };
  return (peer, header) => {
    if (peer === undefined || !trusted(peer)) return peer;
    const xff = header("x-forwarded-for");
    // Prefer X-Forwarded-For, which nearly every proxy appends to; a proxy that writes only Forwarded passes a
    // client's X-Forwarded-For through, so Forwarded is read only when there is none.
    const forwarded = xff === null ? header("forwarded") : null;
    const chain = xff !== null
      ? xff.split(",").map((a) => a.trim())
      : forwarded !== null ? forwardedFor(forwarded) : [];
    for (let i = chain.length - 1; i >= 0; i--) {
      const address = chain[i]!;
      const bytes = parseIp(address);
      // An entry that is no address (garbage, "unknown", an obfuscated node): stop believing the chain here.
      if (bytes === null) return peer;
      if (!trusted(address)) return address;
    }
    return chain.length > 0 && parseIp(chain[0]!) !== null ? chain[0] : peer;
  };
}
