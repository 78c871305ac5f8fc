/**
 * The HTML-form driver against a server that looks nothing like the reference one: a separate login page
 * reached by redirect, unquoted attributes and entities, a path-scoped cookie, a relative consent action,
 * and buttons labelled "Approve" and "No thanks".
 */
import { describe, expect, it } from "vitest";
import {
  ConsentRemembered,
  CookieJar,
  DriverError,
  followRedirects,
  formData,
  htmlFormDriver,
  isRedirectTo,
  parseForms,
  parseLinks,
} from "../../conformance/mod.ts";

const ORIGIN = "http://idp.test";
const REDIRECT = "https://client.test/cb?tenant=7";

/** A small identity provider with its own ideas about forms. */
function otherServer() {
  const sessions = new Set<string>();
  let logins = 0;
  const html = (body: string, headers: Record<string, string> = {}) =>
    new Response(`<!DOCTYPE html><html><head><title>IdP</title></head><body>${body}</body></html>`, {
      headers: { "content-type": "text/html", ...headers },
    });
  const cookies = (request: Request) => request.headers.get("cookie") ?? "";
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const sid = /(?:^|; )sid=([^;]+)/.exec(cookies(request))?.[1];
    if (url.pathname === "/oauth/authorize") {
      if (!sid || !sessions.has(sid)) {
        return new Response(null, { status: 302, headers: { location: `/login?next=${encodeURIComponent(url.pathname + url.search)}` } });
      }
      return html(`
        <!-- <form action="/trap"><input type=password></form> -->
        <script>const fake = '<form action="/trap"><button>Allow</button></form>';</script>
        <form method="POST" action="approve">
          <input type="hidden" name="req" value="${encodeURIComponent(url.search)}">
          <label><input type=checkbox name=remember checked> Remember</label>
          <input type="submit" name="choice" value="Approve">
          <button type="submit" name="choice" value="cancel">No thanks</button>
        </form>`);
    }
    if (url.pathname === "/login" && request.method === "GET") {
      return html(`<form method=post action="/login?next=${encodeURIComponent(url.searchParams.get("next") ?? "")}">
        <input type=hidden name=_token value=abc&amp;def>
        <input type=email name=email><input type=password name=pw>
        <select name=lang><option>en</option><option value=fr selected>French</option></select>
        <button>Sign in</button></form>`, { "set-cookie": "pre=1; Path=/login; HttpOnly" });
    }
    if (url.pathname === "/login" && request.method === "POST") {
      const form = new URLSearchParams(await request.text());
      const ok = form.get("email") === "ada@example.test" && form.get("pw") === "s3cret" && form.get("_token") === "abc&def" &&
        form.get("lang") === "fr" && cookies(request).includes("pre=1");
      if (!ok) return html(`<p>Wrong</p><form method=post><input name=email><input type=password name=pw></form>`);
      logins++;
      const id = `s${logins}`;
      sessions.add(id);
      return new Response(null, { status: 303, headers: { location: url.searchParams.get("next") ?? "/", "set-cookie": `sid=${id}; Path=/; HttpOnly` } });
    }
    if (url.pathname === "/oauth/approve" && request.method === "POST") {
      const form = new URLSearchParams(await request.text());
      const params = new URLSearchParams(decodeURIComponent(form.get("req") ?? ""));
      const target = new URL(params.get("redirect_uri")!);
      if (form.get("choice") === "Approve" && form.get("remember") === "on") target.searchParams.set("code", "c1");
      else target.searchParams.set("error", "access_denied");
      target.searchParams.set("state", params.get("state") ?? "");
      return new Response(null, { status: 302, headers: { location: target.href } });
    }
    return new Response("not found", { status: 404 });
  };
  return { fetch, logins: () => logins };
}

function authorizeUrl(): URL {
  const url = new URL("/oauth/authorize", ORIGIN);
  url.search = new URLSearchParams({ response_type: "code", client_id: "c", redirect_uri: REDIRECT, state: "xyz" }).toString();
  return url;
}

describe("htmlFormDriver", () => {
  it("logs in, approves, and returns the redirect to the client", async () => {
    const server = otherServer();
    const driver = htmlFormDriver({ username: "ada@example.test", password: "s3cret" });
    const result = await driver.approve(authorizeUrl(), { deny: false, fetch: server.fetch });
    expect(result.searchParams.get("code")).toBe("c1");
    expect(result.searchParams.get("state")).toBe("xyz");
    expect(isRedirectTo(result, REDIRECT)).toBe(true);
  });

  it("keeps the session between approvals and can deny", async () => {
    const server = otherServer();
    const driver = htmlFormDriver({ username: "ada@example.test", password: "s3cret" });
    await driver.approve(authorizeUrl(), { deny: false, fetch: server.fetch });
    const denied = await driver.approve(authorizeUrl(), { deny: true, fetch: server.fetch });
    expect(denied.searchParams.get("error")).toBe("access_denied");
    expect(server.logins()).toBe(1);
  });

  it("explains a failed login", async () => {
    const server = otherServer();
    const driver = htmlFormDriver({ username: "ada@example.test", password: "wrong" });
    await expect(driver.approve(authorizeUrl(), { deny: false, fetch: server.fetch })).rejects.toThrow(/check username and password/);
  });

  it("throws a DriverError on an error page", async () => {
    const driver = htmlFormDriver({ username: "u", password: "p" });
    const fetch = () => Promise.resolve(new Response("<title>Bad client</title>", { status: 400, headers: { "content-type": "text/html" } }));
    const error = await driver.approve(authorizeUrl(), { deny: false, fetch }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DriverError);
    expect(String(error)).toMatch(/400.*Bad client/);
  });
});

/** A server whose consent page has an Allow button and a Cancel link, and that remembers consent. */
function cancelLinkServer() {
  let approved = false;
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const back = (param: string, value: string) => {
      const target = new URL(REDIRECT);
      target.searchParams.set(param, value);
      target.searchParams.set("state", url.searchParams.get("state") ?? "");
      return new Response(null, { status: 302, headers: { location: target.href } });
    };
    if (url.pathname === "/oauth/authorize" && request.method === "GET") {
      if (approved) return back("code", "remembered");
      const cancel = new URL("/oauth/cancel", ORIGIN);
      cancel.search = url.search;
      return new Response(`<title>Consent</title><form method=post><button>Allow</button></form>
        <a href="/help">Help</a> <a class=secondary href="${cancel.pathname}${cancel.search.replace(/&/g, "&amp;")}"><span>Cancel</span></a>`, {
        headers: { "content-type": "text/html" },
      });
    }
    if (url.pathname === "/oauth/authorize" && request.method === "POST") {
      approved = true;
      return back("code", "fresh");
    }
    if (url.pathname === "/oauth/cancel") return back("error", "access_denied");
    return new Response("not found", { status: 404 });
  };
  return { fetch };
}

describe("htmlFormDriver and Cancel links, remembered consent", () => {
  it("denies by following a Cancel link when there is no Deny button", async () => {
    const driver = htmlFormDriver({ username: "u", password: "p" });
    const denied = await driver.approve(authorizeUrl(), { deny: true, fetch: cancelLinkServer().fetch });
    expect(denied.searchParams.get("error")).toBe("access_denied");
    expect(denied.searchParams.get("state")).toBe("xyz");
  });

  it("says so when consent is remembered instead of reading the code as a Deny", async () => {
    const server = cancelLinkServer();
    const driver = htmlFormDriver({ username: "u", password: "p" });
    expect((await driver.approve(authorizeUrl(), { deny: false, fetch: server.fetch })).searchParams.get("code")).toBe("fresh");
    expect((await driver.approve(authorizeUrl(), { deny: false, fetch: server.fetch })).searchParams.get("code")).toBe("remembered");
    const error = await driver.approve(authorizeUrl(), { deny: true, fetch: server.fetch }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConsentRemembered);
  });
});

describe("htmlFormDriver and consent remembered per session", () => {
  it("denies in a new session when its own session's consent is remembered", async () => {
    const approved = new Set<string>();
    let sessions = 0;
    const fetch = async (request: Request): Promise<Response> => {
      let sid = /(?:^|; )sid=([^;]+)/.exec(request.headers.get("cookie") ?? "")?.[1];
      const headers = new Headers();
      if (sid === undefined) {
        sid = `s${++sessions}`;
        headers.set("set-cookie", `sid=${sid}; Path=/`);
      }
      const back = (param: string, value: string) => {
        headers.set("location", `${REDIRECT}&${param}=${value}&state=xyz`);
        return new Response(null, { status: 302, headers });
      };
      if (request.method === "GET" && approved.has(sid)) return back("code", "remembered");
      if (request.method === "GET") {
        headers.set("content-type", "text/html");
        return new Response(`<form method=post><button name=d value=allow>Allow</button><button name=d value=deny>Deny</button></form>`, { headers });
      }
      const form = new URLSearchParams(await request.text());
      if (form.get("d") === "allow") approved.add(sid);
      return form.get("d") === "allow" ? back("code", "fresh") : back("error", "access_denied");
    };
    const driver = htmlFormDriver({ username: "u", password: "p" });
    expect((await driver.approve(authorizeUrl(), { deny: false, fetch })).searchParams.get("code")).toBe("fresh");
    const denied = await driver.approve(authorizeUrl(), { deny: true, fetch });
    expect(denied.searchParams.get("error")).toBe("access_denied");
    expect(sessions).toBe(2);
    // The driver's own session is kept: its consent is still remembered.
    expect((await driver.approve(authorizeUrl(), { deny: false, fetch })).searchParams.get("code")).toBe("remembered");
  });
});

describe("the pieces exported for custom drivers", () => {
  it("follow redirects with a cookie jar, and read links", async () => {
    const jar = new CookieJar();
    const fetch = async (request: Request) => {
      const url = new URL(request.url);
      if (url.pathname === "/a") return new Response(null, { status: 302, headers: { location: "/b", "set-cookie": "k=v; Path=/" } });
      if (url.pathname === "/b") return new Response(request.headers.get("cookie"), { status: 200 });
      return new Response(null, { status: 303, headers: { location: "https://client.test/cb?code=1" } });
    };
    const page = await followRedirects(fetch, new URL("http://idp.test/a"), { jar });
    expect(page.kind === "page" && await page.response.text()).toBe("k=v");
    const end = await followRedirects(fetch, new URL("http://idp.test/c"), { jar, until: (u) => u.origin === "https://client.test" });
    expect(end).toEqual({ kind: "arrived", url: new URL("https://client.test/cb?code=1") });
    const links = parseLinks(`<base href="http://x.test/d/"><a href="e?a=1&amp;b=2">E <b>f</b></a><a href="javascript:void 0">no</a>`, new URL("http://x.test/"));
    expect(links).toEqual([{ href: new URL("http://x.test/d/e?a=1&b=2"), text: "E f", id: undefined }]);
  });
});

describe("parseForms and formData", () => {
  it("reads what a browser would submit", () => {
    const [form] = parseForms(
      `<base href="https://h.test/app/"><form action=next METHOD=post>
       <input name=a value='1 &quot;2&quot;'><input name=off disabled value=x><input type=radio name=r value=no>
       <input type=radio name=r value=yes checked><textarea name=t>hi &amp; bye</textarea>
       <select name=s><option value=1>one<option value=2 selected>two</select>
       <button name=go value=yes>Go</button><button type=button name=b>B</button></form>`,
      new URL("https://h.test/start"),
    );
    expect(form!.action.href).toBe("https://h.test/app/next");
    expect(form!.method).toBe("POST");
    const go = form!.controls.find((c) => c.name === "go")!;
    expect(go.text).toBe("Go");
    expect(formData(form!, go)).toEqual([["a", '1 "2"'], ["r", "yes"], ["t", "hi & bye"], ["s", "2"], ["go", "yes"]]);
  });
});

describe("CookieJar", () => {
  it("honours Path, Max-Age, Expires and Secure", () => {
    const jar = new CookieJar();
    const set = (url: string, ...cookies: string[]) =>
      jar.store(new URL(url), new Headers(cookies.map((c) => ["set-cookie", c] as [string, string])));
    set("http://a.test/login/form", "p=1", "root=2; Path=/", "gone=3; Path=/; Max-Age=0", "old=4; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT", "sec=5; Path=/; Secure");
    expect(jar.header(new URL("http://a.test/login/x"))).toBe("p=1; root=2");
    expect(jar.header(new URL("http://a.test/other"))).toBe("root=2");
    expect(jar.header(new URL("https://a.test/"))).toBe("root=2; sec=5");
    expect(jar.header(new URL("http://b.test/"))).toBeNull();
    set("http://a.test/", "root=6; Path=/", "p=0; Path=/login; Max-Age=-1");
    expect(jar.header(new URL("http://a.test/login/x"))).toBe("root=6");
  });

  it("sends only SameSite=None cookies with a cross-site request, and takes a cookie without SameSite as Lax", () => {
    const jar = new CookieJar();
    jar.store(new URL("http://a.test/"), new Headers([
      ["set-cookie", "lax=1; Path=/"],
      ["set-cookie", "strict=2; Path=/; SameSite=Strict"],
      ["set-cookie", "none=3; Path=/; SameSite=None; Secure"],
    ]));
    expect(jar.header(new URL("https://a.test/x"))).toBe("lax=1; strict=2; none=3");
    expect(jar.header(new URL("https://a.test/x"), { crossSite: true })).toBe("none=3");
  });

  it("sends Secure cookies to loopback over http, as browsers do", () => {
    const jar = new CookieJar();
    jar.store(new URL("http://127.0.0.1:8080/"), new Headers([["set-cookie", "s=1; Path=/; Secure; HttpOnly"]]));
    expect(jar.header(new URL("http://127.0.0.1:8080/x"))).toBe("s=1");
  });
});
