// Opens pidshark's HTML pages in a real browser (Debian's chromium, driven by
// playwright-core: no browser is downloaded) and prints, one JSON line a page, what the
// browser saw: the elements drawn, every request the page made, every console error, and
// where its screenshot went. tests/it/browser.rs holds those to the truth files;
// scripts/screenshot uses it for the README's picture.
//
//   node scripts/browser/check.mjs [--screenshots DIR] [--viewport-shot FILE]
//        [--widths 700,1400] PAGE.html...
//
// With --widths, each page is opened at each window width in turn (one line each, with
// its `width`; screenshots NAME-WIDTH.png); the default is one window 1100 px wide.
// A screenshot shows the page's first 6,000 px.
//
// CHROMIUM names the browser (default /usr/bin/chromium).
import { chromium } from "playwright-core";
import { basename, resolve } from "node:path";
import { pathToFileURL } from "node:url";

// Time bounds only guard against hangs: playwright's default of 30 s per step is short
// for a page of 20,000 px laid out and shot while 32 tests share two cores (CI).
const STEP_TIMEOUT_MS = 300_000;
// A screenshot is for a person to look at, not asserted on: a page taller than this is
// shot from its top down to here, since shooting 24,000 px costs far more than it shows.
const SHOT_MAX_HEIGHT = 6_000;

const args = process.argv.slice(2);
let screenshots = null;
let viewportShot = null;
let widths = null;
const pages = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--screenshots") screenshots = args[++i];
  else if (args[i] === "--viewport-shot") viewportShot = args[++i];
  else if (args[i] === "--widths") widths = args[++i].split(",").map(Number);
  else pages.push(args[i]);
}

// The flags the issue names: headless, no sandbox (CI runs as root), no GPU, and no
// background traffic of the browser's own, so that any request seen is the page's.
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});

// What the page holds, counted in the DOM the browser built (not in our text).
function census() {
  // The words of each timestamp and Wireshark filter cell that the browser laid out on
  // more than one line.
  function brokenTokens() {
    const broken = [];
    for (const el of document.querySelectorAll("td.t, code.f")) {
      const text = el.firstChild;
      if (!text || text.nodeType !== Node.TEXT_NODE) continue;
      let at = 0;
      for (const word of text.data.split(" ")) {
        if (word.length > 1) {
          const range = document.createRange();
          range.setStart(text, at);
          range.setEnd(text, at + word.length);
          const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
          if (lines.size > 1) broken.push(word);
        }
        at += word.length + 1;
      }
    }
    return broken;
  }

  // Labels of each chart that overlap another label of it, or are cut: by their
  // clip-path (a band narrower than its label), or by the page's edges. Each as
  // "chart: text".
  function labelTrouble() {
    const overlapping = [];
    const clipped = [];
    const page = document.documentElement;
    for (const svg of document.querySelectorAll("svg")) {
      const labels = [...svg.querySelectorAll("text")]
        .map((t) => ({ el: t, text: t.textContent, box: t.getBoundingClientRect() }))
        .filter((l) => l.box.width > 0 && l.text.trim() !== "");
      for (const l of labels) {
        let out = l.box.left < -0.5 || l.box.right > page.clientWidth + 0.5;
        // a clip-path's own shape has no box; the band it clips to is drawn beside it
        const shape = l.el.hasAttribute("clip-path") && l.el.parentElement.querySelector(":scope > rect");
        if (shape) {
          const c = shape.getBoundingClientRect();
          out ||= l.box.left < c.left - 0.5 || l.box.right > c.right + 0.5;
        }
        if (out) clipped.push(`${svg.id}: ${l.text}`);
      }
      for (let i = 0; i < labels.length; i++) {
        for (let j = i + 1; j < labels.length; j++) {
          const [a, b] = [labels[i].box, labels[j].box];
          const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
          const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
          if (w > 0.5 && h > 0.5) overlapping.push(`${svg.id}: ${labels[i].text} / ${labels[j].text}`);
        }
      }
    }
    return { overlapping, clipped };
  }

  // Tables wider than the space they are given: read only by scrolling sideways.
  function wideTables() {
    return [...document.querySelectorAll("table")]
      .filter((t) => t.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5
        || (t.parentElement && t.parentElement.scrollWidth > t.parentElement.clientWidth + 0.5))
      .map((t) => t.id || "(table)");
  }

  // The smallest side of a drawn fault (overlap, regression), in screen pixels, and the
  // markers beside them.
  function faults() {
    const rects = [...document.querySelectorAll("svg#timeline rect.overlap, svg#timeline rect.regression")];
    const widths = rects.map((r) => {
      const box = r.getBoundingClientRect();
      return Math.min(box.width, box.height);
    });
    return {
      narrowest_fault_px: widths.length ? Math.min(...widths) : null,
      fault_markers: document.querySelectorAll("svg#timeline .fault-marker").length,
    };
  }

  const count = (selector) => document.querySelectorAll(selector).length;
  const drawn = [...document.querySelectorAll("svg")].map((svg) => {
    const box = svg.getBoundingClientRect();
    return { id: svg.id, width: box.width, height: box.height };
  });
  return {
    title: document.title,
    verdict: document.querySelector("#verdict")?.textContent ?? null,
    blocks: count("svg#timeline rect.block"),
    block_bins: count("svg#timeline rect.block-bin"),
    overlaps: count("svg#timeline rect.overlap"),
    regressions: count("svg#timeline rect.regression"),
    gaps: count("svg#timeline rect.gap"),
    failed: count("svg#timeline .failed"),
    failed_bins: count("svg#timeline .failed-bin"),
    latency_dots: count("circle.latency"),
    findings: count("table#findings tr.finding"),
    exchanges: count("table#exchanges tr.exchange"),
    brokers: count("table#brokers tr.broker"),
    svgs: drawn,
    // the time axes' labels, per chart
    ticks: Object.fromEntries(
      [...document.querySelectorAll("svg")].map((svg) => [svg.id, svg.querySelectorAll("text.tick").length]),
    ),
    // wider than the window: a horizontal scrollbar
    scroll_width: document.documentElement.scrollWidth,
    client_width: document.documentElement.clientWidth,
    // timestamps and filters broken over lines inside a word (copy and paste breaks)
    broken_tokens: brokenTokens(),
    bytes: document.documentElement.outerHTML.length,
    labels: labelTrouble(),
    wide_tables: wideTables(),
    ...faults(),
  };
}

try {
  for (const path of pages) {
    for (const width of widths ?? [null]) {
      await check(path, width);
    }
  }
} finally {
  await browser.close();
}

async function check(path, width) {
  const page = await browser.newPage({ viewport: { width: width ?? 1100, height: 900 } });
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.setDefaultNavigationTimeout(STEP_TIMEOUT_MS);
  const url = pathToFileURL(resolve(path)).href;
  const requests = [];
  const consoleErrors = [];
  page.on("request", (r) => {
    if (r.url() !== url) requests.push(r.url());
  });
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  await page.goto(url, { waitUntil: "load" });
  const seen = await page.evaluate(census);
  let screenshot = null;
  if (screenshots) {
    const name = basename(path).replace(/\.html$/, "") + (width ? `-${width}` : "");
    screenshot = `${screenshots}/${name}.png`;
    const height = await page.evaluate(() => document.documentElement.scrollHeight);
    const clip = { x: 0, y: 0, width: width ?? 1100, height: Math.min(height, SHOT_MAX_HEIGHT) };
    await page.screenshot({ path: screenshot, fullPage: true, clip });
  }
  if (viewportShot) {
    await page.screenshot({ path: viewportShot });
  }
  console.log(
    JSON.stringify({ page: path, width, ...seen, requests, console_errors: consoleErrors, screenshot }),
  );
  await page.close();
}
