/**
 * A shields-style badge of one or more runs: as an SVG file to commit or serve, and as the JSON of a shields.io
 * endpoint badge (`https://img.shields.io/endpoint?url=…`).
 *
 * @module
 */
import { escapeHtml } from "./html.ts";
import type { Report } from "./report.ts";

/** What a badge says. */
export interface Badge {
  /** The left side. */
  label: string;
  /** The right side. */
  message: string;
  /** The right side's colour: green when every profile passes clean, yellow with known deviations or warnings, red on a failure. */
  color: string;
}

const GREEN = "#4c1";
const YELLOW = "#dfb317";
const RED = "#e05d44";

/** The badge of a server's runs (one per profile). */
export function badgeOf(reports: readonly Report[]): Badge {
  if (reports.length === 0) throw new TypeError("Cannot make a badge: no report given");
  const sum = (key: "passed" | "failed" | "expected" | "warned") => reports.reduce((n, r) => n + r.summary[key], 0);
  const failed = sum("failed");
  const label = `OAuth conformance${reports.length === 1 ? ` (${reports[0]!.profile})` : ""}`;
  if (failed > 0) return { label, message: `${failed} failed`, color: RED };
  const known = sum("expected");
  const message = `${sum("passed")} passed${known > 0 ? `, ${known} known` : ""}`;
  return { label, message, color: known > 0 || sum("warned") > 0 ? YELLOW : GREEN };
}

/** The shields.io endpoint JSON of a badge (schemaVersion 1). */
export function shieldsJson(badge: Badge): string {
  return JSON.stringify({ schemaVersion: 1, label: badge.label, message: badge.message, color: badge.color });
}

/** Width in pixels of `text` in 11px Verdana, near enough for a badge: narrow, wide and average characters. */
function width(text: string): number {
  let w = 0;
  for (const c of text) w += /[ilj.,:;'|!()[\]]/.test(c) ? 3.5 : /[mwMW@%]/.test(c) ? 10 : /[A-Z0-9]/.test(c) ? 7.5 : 6.5;
  return Math.round(w + 10);
}

/** The badge as a flat shields-style SVG. */
export function badgeSvg(badge: Badge): string {
  const l = width(badge.label);
  const r = width(badge.message);
  const label = escapeHtml(badge.label);
  const message = escapeHtml(badge.message);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${l + r}" height="20" role="img" aria-label="${label}: ${message}">` +
    `<title>${label}: ${message}</title>` +
    `<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>` +
    `<clipPath id="r"><rect width="${l + r}" height="20" rx="3" fill="#fff"/></clipPath>` +
    `<g clip-path="url(#r)"><rect width="${l}" height="20" fill="#555"/><rect x="${l}" width="${r}" height="20" fill="${badge.color}"/><rect width="${l + r}" height="20" fill="url(#s)"/></g>` +
    `<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">` +
    `<text x="${l / 2}" y="15" fill="#010101" fill-opacity=".3">${label}</text><text x="${l / 2}" y="14">${label}</text>` +
    `<text x="${l + r / 2}" y="15" fill="#010101" fill-opacity=".3">${message}</text><text x="${l + r / 2}" y="14">${message}</text></g></svg>\n`;
}
