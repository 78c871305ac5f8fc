// Item 13 of issue 15: client ID metadata documents at the authorization endpoint, fuzzed with an injected fetch
// that serves valid, hostile and broken documents for any client_id. The properties: never a 5xx or an internal
// detail; the server fetches only the client_id URL itself (GET, no redirects followed, none of the user's cookies
// or credentials), and nothing at all for a client_id that is not an https URL on a public host; a consent page or
// a redirect only for a valid document whose client_id is its own URL, and only to a redirect URI that document
// lists; a valid document with one of its redirect URIs gets as far as a code.
import fc from "fast-check";
import { afterAll, expect, test } from "vitest";
import { csrfOf, ISSUER } from "../helpers.ts";
import { mcpFixture } from "../mcp_helpers.ts";
import { CHALLENGE, isRegistered } from "./authorize_inputs.ts";
import { envInt, figures, internalDetail, see } from "./support.ts";

const RUNS = Math.max(100, Math.round(envInt("FUZZ_RUNS", 20_480) / 20));
const tally = { requests: 0, fetched: 0, consent: 0, codes: 0 };
afterAll(() => figures(`fuzz (metadata documents): ${tally.requests} authorization requests, ${tally.fetched} documents fetched, ${tally.consent} consent pages, ${tally.codes} codes`));

/** Client ids: sound ones (each run its own, so no cache answers), and ones that must never be fetched. */
const SOUND = (n: number) => `https://docs${n % 7}.example/clients/c${n}.json`;
const NEVER_FETCHED = [
  "http://docs.example/c.json", "https://docs.example/", "https://docs.example", "https://u:p@docs.example/c.json",
  "https://docs.example/c.json#f", "https://docs.example/a/../c.json", "https://docs.example/a/%2e%2e/c.json",
  "https://127.0.0.1/c.json", "https://10.0.0.1/c.json", "https://[::1]/c.json", "https://localhost/c.json",
  "https://169.254.169.254/latest/meta-data", "javascript:alert(1)", "https://docs.example/a\\c.json",
];

/** What the document server answers; `valid` ones must work, `invalid` ones must be refused, others either. */
const ANSWERS = {
  valid: ["ok", "extra-grant", "max-age-0", "lookalike-name", "native-type", "gzip-small"],
  invalid: [
    "other-client-id", "trailing-slash-id", "javascript-uri", "no-redirect-uris", "secret-method", "client-secret",
    "private-jwk", "not-json", "array", "huge", "redirect", "not-found", "server-error", "throws", "hangs",
    "escape-name", "bidi-name", "web-with-loopback", "bad-type", "gzip-bomb",
  ],
  either: ["evil-http-uri", "text-html", "empty-name"],
} as const;
type Answer = (typeof ANSWERS)[keyof typeof ANSWERS][number];
const ALL_ANSWERS: Answer[] = [...ANSWERS.valid, ...ANSWERS.invalid, ...ANSWERS.either];

const LISTED = ["http://127.0.0.1/callback", "https://host.example/cb"];

/** A body compressed as a server sends it, for a fetch that decodes (as the runtimes' own do). */
async function encoded(text: string, encoding: CompressionFormat): Promise<Response> {
  const body = new Blob([text]).stream().pipeThrough(new CompressionStream(encoding));
  return new Response(body.pipeThrough(new DecompressionStream(encoding)), { headers: { "content-type": "application/json" } });
}

function documentFor(clientId: string, answer: Answer): { response: () => Promise<Response>; redirectUris: string[] } {
  const doc: Record<string, unknown> = {
    client_id: clientId, client_name: "Doc client", redirect_uris: [...LISTED], grant_types: ["authorization_code"],
    token_endpoint_auth_method: "none",
  };
  const json = (body: unknown, init: ResponseInit = {}) => async () => Response.json(body, { headers: { "cache-control": "max-age=600" }, ...init });
  switch (answer) {
    case "extra-grant": doc.grant_types = ["authorization_code", "urn:example:unknown"]; break;
    case "max-age-0": return { response: async () => Response.json(doc, { headers: { "cache-control": "max-age=0" } }), redirectUris: LISTED };
    case "other-client-id": doc.client_id = "https://elsewhere.example/c.json"; break;
    case "trailing-slash-id": doc.client_id = clientId + "/"; break;
    case "javascript-uri": doc.redirect_uris = ["javascript:alert(1)"]; return { response: json(doc), redirectUris: [] };
    case "no-redirect-uris": delete doc.redirect_uris; return { response: json(doc), redirectUris: [] };
    case "secret-method": doc.token_endpoint_auth_method = "client_secret_basic"; break;
    case "client-secret": doc.client_secret = "a-secret-in-a-public-document"; break;
    case "private-jwk": doc.jwks = { keys: [{ kty: "EC", crv: "P-256", x: "x", y: "y", d: "private" }] }; break;
    case "not-json": return { response: async () => new Response("{not json", { headers: { "content-type": "application/json" } }), redirectUris: [] };
    case "array": return { response: json([doc]), redirectUris: [] };
    case "huge": doc.client_name = "x".repeat(8 * 1024); break;
    case "redirect": return { response: async () => new Response(null, { status: 302, headers: { location: "https://elsewhere.example/c.json" } }), redirectUris: [] };
    case "not-found": return { response: async () => new Response("no", { status: 404 }), redirectUris: [] };
    case "server-error": return { response: async () => new Response("boom", { status: 500 }), redirectUris: [] };
    case "throws": return { response: () => Promise.reject(new TypeError("fetch failed: ECONNREFUSED 10.0.0.7:443")), redirectUris: [] };
    case "hangs": return { response: () => new Promise<Response>(() => {}), redirectUris: [] };
    case "evil-http-uri": doc.redirect_uris = [...LISTED, "http://evil.example/cb"]; break;
    case "text-html": return { response: async () => new Response(JSON.stringify(doc), { headers: { "content-type": "text/html" } }), redirectUris: LISTED };
    case "empty-name": doc.client_name = ""; break;
    // The names and types the one door rules on, and bodies whose encoding would hide their size.
    case "lookalike-name": doc.client_name = "C\u043emmand line"; break;
    case "escape-name": doc.client_name = "Doc\u001b[2K\u001b]0;owned\u0007"; break;
    case "bidi-name": doc.client_name = "Doc\u202egnp.exe"; break;
    case "native-type": doc.application_type = "native"; break;
    case "web-with-loopback": doc.application_type = "web"; break;
    case "bad-type": doc.application_type = "desktop"; break;
    case "gzip-small": return { response: async () => encoded(JSON.stringify(doc), "gzip"), redirectUris: LISTED };
    case "gzip-bomb": return { response: async () => encoded(JSON.stringify(doc) + " ".repeat(4 << 20), "gzip"), redirectUris: [] };
  }
  return { response: json(doc), redirectUris: doc.redirect_uris as string[] };
}

test("a client_id URL: only its own document is fetched, and only a valid one leads to consent or a redirect", async () => {
  let current: { clientId: string; served: ReturnType<typeof documentFor> } | undefined;
  const fetched: Request[] = [];
  const { server } = await mcpFixture({
    defaultScope: "read",
    clientMetadataDocuments: {
      enabled: true,
      // Long enough for a valid gzip body to be decoded on a loaded CI machine (50 ms failed there once); the
      // "hangs" answers wait it out, about 18 of them a run.
      timeout: 400,
      // Every run names a new URL from one address: the ceiling is the subject of its own test.
      maxPerHour: 1_000_000,
      fetch: (request) => {
        fetched.push(request);
        return current!.served.response();
      },
    },
  });
  let n = 0;
  const input = fc.record({
    sound: fc.boolean(),
    never: fc.constantFrom(...NEVER_FETCHED),
    answer: fc.constantFrom(...ALL_ANSWERS),
    redirect: fc.constantFrom(...LISTED, "http://127.0.0.1:51234/callback", "http://evil.example/cb", "https://host.example/cb/", "javascript:alert(1)"),
    approve: fc.boolean(),
  });
  await fc.assert(fc.asyncProperty(input, async (i) => {
    const clientId = i.sound ? SOUND(n++) : i.never;
    const served = documentFor(clientId, i.answer);
    current = { clientId, served };
    fetched.length = 0;
    const url = `${ISSUER}/authorize?${new URLSearchParams({
      response_type: "code", client_id: clientId, redirect_uri: i.redirect, state: "st", code_challenge: CHALLENGE, code_challenge_method: "S256",
    })}`;
    // The user's own credentials ride along: none of them may reach the document host.
    const headers = { cookie: "session=users-cookie", authorization: "Basic dXNlcjpwYXNz", "x-test-user": "alice" };
    const seen = await see(await server.fetch(new Request(url, { headers })));
    tally.requests++;
    const problems: string[] = [];
    if (seen.status >= 500) problems.push(`status ${seen.status}: ${seen.body.slice(0, 200)}`);
    const leak = internalDetail(seen.body);
    if (leak !== undefined || /ECONNREFUSED|10\.0\.0\.7/.test(seen.body)) problems.push(`internal detail: ${leak ?? "the fetch error"}`);

    // What was fetched: the client_id itself, plainly, or nothing.
    tally.fetched += fetched.length;
    if (!i.sound && fetched.length > 0) problems.push(`fetched ${fetched[0]!.url} for a client_id that is not a public https URL`);
    for (const request of fetched) {
      if (request.url !== clientId) problems.push(`fetched ${request.url}, not the client_id`);
      if (request.method !== "GET") problems.push(`fetched with ${request.method}`);
      if (request.redirect === "follow") problems.push("the fetch follows redirects");
      for (const name of ["cookie", "authorization", "x-test-user"]) if (request.headers.has(name)) problems.push(`the fetch forwards ${name}`);
    }

    const consent = seen.status === 200 && /name="csrf"/.test(seen.body);
    const location = seen.headers.get("location");
    const valid = i.sound && (ANSWERS.valid as readonly string[]).includes(i.answer);
    const invalid = !i.sound || (ANSWERS.invalid as readonly string[]).includes(i.answer);
    const listed = isRegistered(served.redirectUris, i.redirect) && !i.redirect.startsWith("http://evil");
    if ((consent || location !== null) && invalid) problems.push(`${consent ? "a consent page" : `a redirect to ${location}`} for a refused document (${i.answer})`);
    if (location !== null && !listed) problems.push(`a redirect to ${location}, which the document does not list`);
    if (location !== null && !location.startsWith(i.redirect + "?")) problems.push(`a redirect to ${location}, not to ${i.redirect}`);
    if (valid && listed && !consent) problems.push(`no consent page for a valid document: ${seen.status} ${seen.body.slice(0, 160)}`);
    if (consent) {
      tally.consent++;
      // A document's client registered itself: the page says so, and says whom a look-alike is not.
      if (!seen.body.includes('<span class="tag">unverified</span>')) problems.push("a document client's consent page without the unverified mark");
      if (i.answer === "lookalike-name" && !seen.body.includes("This is not <strong>Command line</strong>")) problems.push("a look-alike name without the warning");
      if (i.approve) {
        const allowed = await server.fetch(new Request(url, {
          method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "x-test-user": "alice" },
          body: new URLSearchParams({ decision: "allow", csrf: csrfOf(seen.body) }).toString(),
        }));
        const to = allowed.headers.get("location") ?? "";
        if (allowed.status !== 303 || !to.startsWith(i.redirect + "?") || !new URL(to).searchParams.has("code")) {
          problems.push(`approval: ${allowed.status} ${to}`);
        } else tally.codes++;
      }
    }
    if (problems.length > 0) throw new Error(`${problems.join("; ")}\n  input: ${JSON.stringify({ clientId, ...i })}`);
  }), { numRuns: RUNS });
  expect(tally.codes, "the deep path was reached").toBeGreaterThan(0);
}, 120_000);
