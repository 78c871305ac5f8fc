/**
 * The publishable report: one self-contained HTML page (inline CSS, no script, nothing fetched) for one server,
 * with each profile's tally, the features it offers, and every failure with its rule, level, the request and
 * the response. Every text is escaped, and the exchanges are masked again, so that neither a hostile server's
 * response nor a secret it echoes reaches the page as it was.
 *
 * @module
 */
import { mask, maskForm, maskJson, maskUrl } from "./http.ts";
import { type Report, verdictLabel } from "./report.ts";
import { AREAS, type CaseResult, type Exchange } from "./types.ts";

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const SECRET_HEADERS = /^(authorization|proxy-authorization|cookie|set-cookie|dpop)$/i;

/** Masks an exchange once more, whatever produced it (a report read back from JSON, say). */
function masked(e: Exchange): Exchange {
  const headers = (h: Record<string, string>) =>
    Object.fromEntries(Object.entries(h).map(([k, v]) => [k, SECRET_HEADERS.test(k) && !/\*\*\*/.test(v) ? mask(v) : k.toLowerCase() === "location" ? maskUrl(v) : v]));
  const body = (b: string) => maskJson(/^[\w.%-]+=/.test(b) && !/\s/.test(b) ? maskForm(b) : b);
  const out: Exchange = { request: { method: e.request.method, url: maskUrl(e.request.url), headers: headers(e.request.headers) } };
  if (e.request.body !== undefined) out.request.body = body(e.request.body);
  if (e.response !== undefined) out.response = { status: e.response.status, headers: headers(e.response.headers), body: body(e.response.body) };
  if (e.error !== undefined) out.error = e.error;
  return out;
}

function exchangeHtml(e: Exchange): string {
  const m = masked(e);
  const request = [`${m.request.method} ${m.request.url}`, ...Object.entries(m.request.headers).map(([k, v]) => `${k}: ${v}`)];
  if (m.request.body !== undefined) request.push("", m.request.body);
  const response = m.response === undefined
    ? [`(no response: ${m.error ?? "unknown error"})`]
    : [`${m.response.status}`, ...Object.entries(m.response.headers).map(([k, v]) => `${k}: ${v}`), ...(m.response.body === "" ? [] : ["", m.response.body])];
  return `<div class="exchange"><div><h5>Request</h5><pre>${escapeHtml(request.join("\n"))}</pre></div>` +
    `<div><h5>Response</h5><pre>${escapeHtml(response.join("\n"))}</pre></div></div>`;
}

const CLASS: Record<string, string> = { PASS: "pass", FAIL: "fail", WARN: "warn", SKIP: "skip", BLOCKED: "blocked", NOT_OFFERED: "off" };

function badgeOf(r: CaseResult): string {
  const expected = r.expected !== undefined && r.verdict !== "PASS" && r.verdict !== "SKIP" && r.verdict !== "NOT_OFFERED";
  return `<span class="v ${expected ? "expected" : CLASS[r.verdict]}">${escapeHtml(expected ? `expected ${verdictLabel(r.verdict)}` : verdictLabel(r.verdict))}</span>`;
}

function failureHtml(r: CaseResult): string {
  const expected = r.expected === undefined ? "" : `<p class="reason">Expected failure: ${escapeHtml(r.expected)}</p>`;
  const blocked = r.blocked_by !== undefined && r.blocked_by !== "control" ? `<p>Blocked by <a href="#${escapeHtml(r.id)}">${escapeHtml(r.blocked_by)}</a></p>` : "";
  return `<article class="failure" id="${escapeHtml(r.id)}"><h4>${badgeOf(r)} <code>${escapeHtml(r.id)}</code> ${escapeHtml(r.title)}</h4>` +
    `<p class="ref"><span class="level">${escapeHtml(r.level)}</span> ${escapeHtml(r.ref)}</p>${expected}${blocked}` +
    (r.message === undefined ? "" : `<pre class="message">${escapeHtml(r.message)}</pre>`) +
    r.evidence.map(exchangeHtml).join("") + "</article>";
}

function tallyRow(report: Report): string {
  const s = report.summary;
  const cells = [s.passed, s.failed, s.expected, s.not_offered, s.skipped, s.warned, s.blocked];
  const status = s.failed > 0 ? "fail" : s.warned > 0 || s.expected > 0 ? "warn" : "pass";
  return `<tr><th><a href="#profile-${escapeHtml(report.profile)}">${escapeHtml(report.profile)}</a></th>${cells.map((n) => `<td>${n}</td>`).join("")}<td class="${status}">${s.failed > 0 ? "fails" : "passes"}</td></tr>`;
}

function featuresHtml(report: Report): string {
  const d = report.discovery;
  if (d === undefined) return "";
  const rows = d.features.map((f) =>
    `<tr><td><code>${escapeHtml(f.id)}</code></td><td>${escapeHtml(f.title)}</td><td class="${f.offered ? "pass" : "off"}">${f.offered ? "offered" : "not offered"}</td><td>${escapeHtml(f.detail)}</td></tr>`
  );
  const where = d.metadata_found ? `read from <code>${escapeHtml(d.metadata_url)}</code>` : `no metadata: ${escapeHtml(d.problem ?? d.metadata_url)}`;
  return `<section><h2>Features</h2><p>Capability discovery, ${where}. The cases of a feature that is not offered are reported as not offered, never as passed.</p>` +
    `<table><thead><tr><th>Feature</th><th>What</th><th>Status</th><th>How it was found</th></tr></thead><tbody>${rows.join("")}</tbody></table></section>`;
}

function profileHtml(report: Report): string {
  const problems = report.results.filter((r) => r.verdict === "FAIL" || r.verdict === "WARN" || (r.verdict === "BLOCKED" && r.blocked_by === "control"));
  const open = problems.filter((r) => r.expected === undefined);
  const known = problems.filter((r) => r.expected !== undefined);
  const list = (title: string, items: CaseResult[]) => items.length === 0 ? "" : `<h3>${escapeHtml(title)} (${items.length})</h3>${items.map(failureHtml).join("")}`;
  const all = Object.entries(AREAS).map(([area, title]) => {
    const rows = report.results.filter((r) => r.area === area);
    if (rows.length === 0) return "";
    return `<tr><th colspan="4">${escapeHtml(title)}</th></tr>` + rows.map((r) =>
      `<tr><td>${badgeOf(r)}</td><td><code>${escapeHtml(r.id)}</code></td><td>${escapeHtml(r.title)}</td><td><span class="level">${escapeHtml(r.level)}</span> ${escapeHtml(r.ref)}</td></tr>`
    ).join("");
  }).join("");
  const s = report.summary;
  return `<section id="profile-${escapeHtml(report.profile)}"><h2>Profile <code>${escapeHtml(report.profile)}</code></h2>` +
    `<p>${s.total} cases in ${(report.duration_ms / 1000).toFixed(1)} s: ${s.passed} passed, ${s.failed} failed, ${s.expected} expected failures, ${s.not_offered} not offered, ${s.skipped} skipped, ${s.warned} warnings, ${s.blocked} blocked.</p>` +
    list("Failures", open) + list("Expected failures", known) +
    (open.length + known.length === 0 ? "<p>No failure.</p>" : "") +
    `<details><summary>Every case of the profile</summary><table class="cases"><tbody>${all}</tbody></table></details></section>`;
}

const CSS = `
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:72rem;padding:1.5rem;color:#1b1f24;background:#fff}
h1{font-size:1.6rem;margin:0 0 .25rem}h2{border-bottom:1px solid #d0d7de;padding-bottom:.25rem;margin-top:2rem}
h4{margin:.2rem 0}h5{margin:.3rem 0;font-size:.8rem;text-transform:uppercase;color:#57606a}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
thead th{background:#f6f8fa}td:not(:first-child){font-variant-numeric:tabular-nums}
code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace}
pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;border:1px solid #d0d7de;padding:.5rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all;margin:.2rem 0}
.failure{border:1px solid #d0d7de;border-left:4px solid #cf222e;border-radius:4px;padding:.6rem .8rem;margin:.8rem 0}
.exchange{display:grid;grid-template-columns:1fr 1fr;gap:.6rem}@media(max-width:50rem){.exchange{grid-template-columns:1fr}}
.v{display:inline-block;border-radius:3px;padding:0 .4rem;font-size:.75rem;font-weight:600;color:#fff;white-space:nowrap}
.v.pass{background:#1a7f37}.v.fail{background:#cf222e}.v.warn{background:#9a6700}.v.skip,.v.off{background:#6e7781}.v.blocked{background:#8250df}.v.expected{background:#bc4c00}
td.pass{color:#1a7f37;font-weight:600}td.fail{color:#cf222e;font-weight:600}td.warn{color:#9a6700;font-weight:600}td.off{color:#6e7781}
.level{font-weight:600}.ref{color:#57606a;margin:.1rem 0}.reason{color:#bc4c00}.meta{color:#57606a}
`;

/** Options of {@link formatHtml}. */
export interface HtmlOptions {
  /** The page's date. Default: the start of the first report. */
  date?: Date;
}

/**
 * One self-contained HTML page for the reports of one server (one per profile): the server, the date, each
 * profile's tally, the features discovery found, and each failure with its rule, level and evidence.
 */
export function formatHtml(reports: readonly Report[], options: HtmlOptions = {}): string {
  if (reports.length === 0) throw new TypeError("Cannot write an HTML report: no report given");
  const first = reports[0]!;
  const date = options.date ?? new Date(first.started_at);
  const name = first.target.name;
  const head = ["Profile", "Passed", "Failed", "Expected failures", "Not offered", "Skipped", "Warnings", "Blocked", "Verdict"];
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>OAuth conformance: ${escapeHtml(name)}</title><style>${CSS}</style></head>
<body><header><h1>OAuth conformance: ${escapeHtml(name)}</h1>
<p class="meta"><code>${escapeHtml(first.target.base_url)}</code> · tested ${escapeHtml(date.toISOString().slice(0, 10))} (${escapeHtml(date.toISOString())}) · ${escapeHtml(first.suite)}</p></header>
<section><h2>Tally</h2><table><thead><tr>${head.map((h) => `<th>${h}</th>`).join("")}</tr></thead><tbody>${reports.map(tallyRow).join("")}</tbody></table>
<p class="meta">A MUST case that fails fails the profile; a SHOULD case warns. Expected failures are the server's known deviations, each with its reason. Secrets, codes, tokens, passwords, Authorization headers and cookies are shown by their first four characters only.</p></section>
${featuresHtml(first)}
${reports.map(profileHtml).join("\n")}
</body></html>
`;
}
