// xp explorer: the pages of a campaign's evidence (campaigns, effects,
// configuration, run, compare). Every view's state is in the address
// (#/page?key=value...), so a link restores it. Data comes from
// data/NAME.js scripts that call XP.put with gzip-compressed JSON; the
// figures are drawn by Observable Plot.
"use strict";

const XP = (() => {
  const waiting = {};
  const cache = {};
  const PAGE = 50;

  // put receives a data script's payload.
  async function put(name, b64) {
    const w = waiting[name];
    try {
      const bin = atob(b64);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      const v = JSON.parse(await new Response(stream).text());
      cache[name] = v;
      if (w) { delete waiting[name]; w.resolve(v); }
    } catch (e) {
      if (w) { delete waiting[name]; w.reject(e); }
    }
  }

  // load returns data/NAME.js's value; fresh reads it again (live mode).
  function load(name, fresh) {
    if (cache[name] && !fresh) return Promise.resolve(cache[name]);
    if (waiting[name]) return waiting[name].promise;
    const w = {};
    w.promise = new Promise((resolve, reject) => { w.resolve = resolve; w.reject = reject; });
    waiting[name] = w;
    const s = document.createElement("script");
    s.src = "data/" + name + ".js" + (fresh ? "?t=" + Date.now() : "");
    s.onload = () => s.remove();
    s.onerror = () => { s.remove(); delete waiting[name]; w.reject(new Error("cannot load data/" + name + ".js")); };
    document.head.appendChild(s);
    return w.promise;
  }

  // ---- the address ----
  function route() {
    const h = location.hash.replace(/^#\/?/, "");
    const [page, q] = h.split("?");
    return { page: page || "campaigns", q: new URLSearchParams(q || "") };
  }
  function href(page, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const s = q.toString();
    return "#/" + page + (s ? "?" + s : "");
  }
  function go(page, params) { location.hash = href(page, params); }
  function paramsOf(q) { const o = {}; for (const [k, v] of q) o[k] = v; return o; }

  // ---- small DOM helpers ----
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const k of kids.flat()) if (k !== undefined && k !== null) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || v === "") return "";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v)) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && a < 0.001) return v.toPrecision(2);
    const d = digits !== undefined ? digits : a >= 100 ? 1 : a >= 10 ? 2 : 3;
    return v.toFixed(d);
  }
  function table(header, rows, opts) {
    opts = opts || {};
    const num = header.map((_, i) => rows.length > 0 && rows.every(r => r[i] === null || r[i] === "" || typeof r[i] === "number" || (r[i] instanceof Node && r[i].dataset && r[i].dataset.num)));
    return el("table", { id: opts.id, class: opts.class },
      header.some(h => h !== "") ? el("thead", {}, el("tr", {}, header.map((h, i) => el("th", { class: num[i] ? "num" : null }, h)))) : null,
      el("tbody", {}, rows.map(r => el("tr", opts.rowAttrs ? opts.rowAttrs(r) : {}, r.map((c, i) =>
        el("td", { class: num[i] ? "num" : null, "data-col": header[i], "data-value": typeof c === "number" ? String(c) : null }, typeof c === "number" ? fmt(c) : c))))));
  }
  function csvText(header, rows) {
    const q = v => {
      if (v === null || v === undefined) return "";
      const s = String(v);
      return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
    };
    return [header, ...rows].map(r => r.map(q).join(",")).join("\n") + "\n";
  }
  function download(name, type, text) {
    const a = el("a", { href: URL.createObjectURL(new Blob([text], { type })), download: name });
    document.body.append(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }
  // figure boxes a chart with its SVG and CSV downloads.
  function figure(id, title, chart, header, rows) {
    const svg = () => chart.tagName.toLowerCase() === "svg" ? chart : chart.querySelector("svg");
    return el("figure", { "data-fig": id },
      el("figcaption", {}, title,
        el("button", { "data-download": "svg", onclick: () => {
          const s = svg().cloneNode(true);
          s.setAttribute("xmlns", "http://www.w3.org/2000/svg");
          download(id + ".svg", "image/svg+xml", new XMLSerializer().serializeToString(s));
        } }, "SVG"),
        el("button", { "data-download": "csv", onclick: () => download(id + ".csv", "text/csv", csvText(header, rows)) }, "CSV")),
      chart);
  }
  function pager(total, page, set) {
    const pages = Math.max(1, Math.ceil(total / PAGE));
    if (pages === 1) return null;
    return el("div", { class: "pager" },
      el("button", { disabled: page <= 1, onclick: () => set(page - 1) }, "‹ previous"),
      `page ${page} of ${pages} (${total} rows)`,
      el("button", { disabled: page >= pages, onclick: () => set(page + 1) }, "next ›"));
  }
  function statusMark(c) {
    if (!c) return null;
    return c.provisional
      ? el("span", { class: "provisional", "data-provisional": "1" }, "provisional: campaign running, effects may move")
      : el("span", { class: "final" }, "final");
  }
  // cellLabel names a configuration by the factors that vary among cells
  // (default: the campaign's), so a slice's labels leave out what it fixes.
  function cellLabel(c, cell, cells, name) {
    name = name || (f => f);
    const vary = c.cellFactors.filter((f, i) => new Set((cells || c.cells).map(x => x.levels[i])).size > 1);
    const parts = vary.map(f => name(f) + "=" + cell.levels[c.cellFactors.indexOf(f)]);
    return parts.length ? parts.join(" ") : cell.pair;
  }
  // shortFactor abbreviates a compound factor's name for a figure's axis
  // (brokers/replication_factor/min_insync_replicas: b/rf/mir).
  function shortFactor(f) {
    return f.includes("/") ? f.split("/").map(p => p.split("_").map(w => w[0]).join("")).join("/") : f;
  }
  const col = name => ["treatment", "baseline", "metric", "scope", "n", "statistic", "unit", "estimate", "ci_low", "ci_high",
    "method", "p_value", "p_holm", "note", "test", "p_min", "bounded", "outlier_sets"].indexOf(name);
  const RC = { run: 0, cell: 1, pair: 2, replicate: 3, attempt: 4, final: 5, level: 6, outcome: 7, reasons: 8, outliers: 9, superseded: 10 };
  const nRC = 11;

  // ---- pages ----
  let site = null;
  let renderSeq = 0;

  async function campaign(i) { return load("c" + i, site.live); }
  // effectRows loads campaign c's effects of one treatment (every
  // treatment when tr is null) and statistic: effects.csv's rows.
  async function effectRows(c, tr, stat) {
    const parts = c.effectParts.filter(p => (tr === null || p.treatment === tr) && p.statistic === stat);
    const rows = await Promise.all(parts.map(p => load(`c${c.index}-e${p.part}`, site.live)));
    return rows.flat();
  }

  function nav(page, c) {
    const links = [["campaigns", "Campaigns", {}], ["effects", "Effects", { c }]];
    if (site.campaigns.length > 1) links.push(["compare", "Compare", {}]);
    document.getElementById("nav").replaceChildren(...links.map(([p, t, q]) =>
      el("a", { href: href(p, q), class: p === page ? "here" : null }, t)));
    document.getElementById("live").replaceChildren(site.live ? el("span", { class: "muted" }, "live: reading the databases every 2 s") : "");
  }

  async function pageCampaigns() {
    const cards = [];
    for (const s of site.campaigns) {
      const c = await campaign(s.index);
      const p = c.progress;
      const states = Object.keys(p.rows).filter(k => p.rows[k] > 0 || k === "done" || k === "pending");
      const done = (p.rows.done || 0) + (p.rows.invalid || 0) + (p.rows.failed || 0);
      const info = c.info.filter(([k]) => k !== "spec" && k !== "host");
      cards.push(el("section", { class: "card", "data-campaign": c.index },
        el("h2", {}, c.name, " ", statusMark(c)),
        el("p", { class: "muted", id: "dates-" + c.index }, p.firstStarted ? `first run started ${utc(p.firstStarted)}` : "no run started yet",
          p.lastEnded ? ` · last ended ${utc(p.lastEnded)}` : ""),
        el("p", { class: "muted" }, c.db, " · ", `${done} of ${p.total} rows finished`,
          p.eta ? " · ETA " + p.eta.replace("T", " ").replace("Z", " UTC") : "", p.running ? " · running " + p.running : ""),
        table(states, [states.map(k => p.rows[k] || 0)], { id: "rows-" + c.index, class: "rows" }),
        latestRuns(c),
        table(["", ""], info.map(([k, v]) => [k, v]), { class: "info" }),
        p.cost > 0 ? el("p", {}, `cost $${p.cost.toFixed(2)}`) : null,
        el("p", {}, el("a", { href: href("effects", { c: c.index }) }, "effects"), " · ",
          el("a", { href: href("runs", { c: c.index }) }, "runs")),
        c.notes.length ? el("ul", {}, c.notes.map(n => el("li", { class: "muted" }, n))) : null,
        el("details", {}, el("summary", {}, "spec"), el("pre", {}, (c.info.find(([k]) => k === "spec") || ["", ""])[1]))));
    }
    return [el("h1", {}, "Campaigns"), el("div", { class: "cards" }, cards)];
  }

  const utc = t => t.replace("T", " ").replace("Z", " UTC");

  // latestRuns lists the attempts that ended last, with their health and
  // headline latency.
  function latestRuns(c) {
    const latest = c.progress.latest || [];
    if (!latest.length) return null;
    const ms = ["publish_ms_p99", "e2e_ms_p99"].filter(m => c.runMetrics.includes(m));
    return [el("h3", {}, "Latest runs"), table(["run", c.treatment, "ended (UTC)", "outcome", ...ms], latest.map(({ index, ended }) => {
      const r = c.runs[index];
      return [el("a", { href: href("run", { c: c.index, run: r[RC.run], a: r[RC.attempt] }) }, r[RC.run]), r[RC.level], ended.replace("T", " ").replace("Z", ""),
        r[RC.outcome] === "done" ? "healthy" : el("span", { class: "bad", title: r[RC.reasons] }, r[RC.outcome] + (r[RC.reasons] ? ": " + r[RC.reasons] : "")),
        ...ms.map(m => r[nRC + c.runMetrics.indexOf(m)])];
    }), { id: "latest-" + c.index })];
  }

  // effects: pick treatment, metrics, statistic; filter by factor levels.
  async function pageEffects(q) {
    const ci = +(q.get("c") || 0);
    const c = await campaign(ci);
    const tr = q.get("tr") || c.levels[1] || "";
    const stat = q.get("stat") || "ratio_penalty";
    const metrics = (q.get("m") || (c.metrics.find(m => m.name === "publish_ms_p99") || c.metrics[0] || {}).name || "").split(",").filter(Boolean);
    const page = +(q.get("page") || 1);
    const filter = {};
    for (const f of c.cellFactors) if (q.has("f." + f)) filter[f] = q.get("f." + f).split(",");
    const state = paramsOf(q);
    const set = (k, v) => { const s = { ...state, [k]: v }; if (k !== "page") delete s.page; go("effects", s); };

    const inSlice = cell => c.cellFactors.every((f, i) => !filter[f] || filter[f].includes(cell.levels[i]));
    const slice = c.cells.filter(inSlice);
    const byPair = new Map(slice.map(x => [x.pair, x]));
    const stats = [...new Set(c.effectParts.filter(p => p.treatment === tr).map(p => p.statistic))];
    const effects = await effectRows(c, tr, stat);

    const controls = el("div", { class: "controls" },
      site.campaigns.length > 1 ? el("fieldset", {}, el("legend", {}, "campaign"),
        el("select", { id: "campaign", onchange: e => go("effects", { c: e.target.value }) },
          site.campaigns.map(s => el("option", { value: s.index, selected: s.index === ci }, s.name + " (" + s.db + ")")))) : null,
      el("fieldset", {}, el("legend", {}, "treatment"),
        el("select", { id: "treatment", onchange: e => set("tr", e.target.value) },
          c.levels.slice(1).map(l => el("option", { value: l, selected: l === tr }, l)))),
      el("fieldset", {}, el("legend", {}, "statistic"),
        el("select", { id: "statistic", onchange: e => set("stat", e.target.value) },
          stats.map(s => el("option", { value: s, selected: s === stat }, s)))),
      el("fieldset", { id: "metrics" }, el("legend", {}, "metrics"),
        c.metrics.map(m => el("label", { class: "chip" },
          el("input", { type: "checkbox", "data-metric": m.name, checked: metrics.includes(m.name), onchange: e => {
            const next = e.target.checked ? [...metrics, m.name] : metrics.filter(x => x !== m.name);
            set("m", c.metrics.map(x => x.name).filter(x => next.includes(x)).join(","));
          } }), m.name))),
      c.cellFactors.filter(f => (c.factorLevels[f] || []).length > 1).map(f => el("fieldset", { "data-factor": f }, el("legend", {}, f),
        c.factorLevels[f].map(l => el("label", { class: "chip" },
          el("input", { type: "checkbox", "data-level": l, checked: !filter[f] || filter[f].includes(l), onchange: e => {
            const cur = filter[f] || c.factorLevels[f];
            const next = e.target.checked ? [...cur, l] : cur.filter(x => x !== l);
            const keep = c.factorLevels[f].filter(x => next.includes(x));
            set("f." + f, keep.length === c.factorLevels[f].length ? "" : keep.join(","));
          } }), l)))));

    const out = [el("h1", {}, `Effects of ${tr} against ${c.levels[0]}: ${c.name} `, statusMark(c)), controls,
      el("p", { id: "slice" }, `${slice.length} of ${c.cells.length} configurations in the slice`)];
    const pooled = effects.filter(e => e[col("treatment")] === tr && e[col("statistic")] === stat &&
      metrics.includes(e[col("metric")]) && e[col("scope")].startsWith("all"));
    if (pooled.length) {
      out.push(el("h2", {}, "Pooled over every configuration"),
        table(["metric", "scope", "n", "estimate", "interval", "method", "p"], pooled.map(e =>
          [e[col("metric")], e[col("scope")], e[col("n")], e[col("estimate")], interval(e), e[col("method")], e[col("p_value")]]), { id: "pooled" }));
    }
    for (const m of metrics) {
      const rows = effects.filter(e => e[col("treatment")] === tr && e[col("statistic")] === stat &&
        e[col("metric")] === m && byPair.has(e[col("scope")]));
      const unit = rows.length ? rows[0][col("unit")] : "";
      out.push(el("h2", {}, `${m}: ${stat}${unit ? " (" + unit + ")" : ""}`));
      if (!rows.length) { out.push(el("p", { class: "muted" }, "no per-configuration effect of this metric in the slice")); continue; }
      const shown = rows.slice(0, 200);
      const label = e => cellLabel(c, byPair.get(e[col("scope")]), slice);
      const short = e => cellLabel(c, byPair.get(e[col("scope")]), slice, shortFactor);
      const data = shown.map(e => ({ label: short(e), pair: e[col("scope")], est: e[col("estimate")], lo: e[col("ci_low")], hi: e[col("ci_high")] }));
      const abbreviated = c.cellFactors.filter(f => shortFactor(f) !== f && data.some(d => d.label.includes(shortFactor(f) + "=")));
      const chart = Plot.plot({
        width: 1100, height: 50 + 22 * data.length, style: { fontSize: "12px" }, marginLeft: Math.min(640, 12 + 7 * Math.max(...data.map(d => d.label.length))),
        x: { label: `${stat} ${unit}`, grid: true }, y: { label: null, domain: data.map(d => d.label) },
        marks: [
          Plot.ruleX([0], { stroke: "#888" }),
          Plot.link(data.filter(d => typeof d.lo === "number" && typeof d.hi === "number"), { x1: "lo", x2: "hi", y1: "label", y2: "label", stroke: "#4a78b0" }),
          Plot.dot(data, { x: "est", y: "label", fill: "#0b5cad", r: 3.5, title: d => `${d.pair}: ${d.est}` }),
        ],
      });
      chart.setAttribute("data-forest", m);
      const header = ["treatment", "baseline", "metric", "scope", "configuration", "n", "statistic", "unit", "estimate", "ci_low", "ci_high", "method", "p_value", "p_holm", "note"];
      const csvRows = rows.map(e => [e[0], e[1], e[2], e[3], label(e), e[4], e[5], e[6], e[7], e[8], e[9], e[10], e[11], e[12], e[13]]);
      if (abbreviated.length) out.push(el("p", { class: "muted" }, "On the axis: " + abbreviated.map(f => shortFactor(f) + " = " + f).join("; ")));
      out.push(figure("forest-" + m, `forest plot, ${shown.length === rows.length ? rows.length : shown.length + " of " + rows.length} configurations`, chart, header, csvRows));
      const start = (page - 1) * PAGE;
      out.push(pager(rows.length, page, p => set("page", p)) || "",
        table(["configuration", "n", "estimate", "interval", "method", "p", "outlier sets"], rows.slice(start, start + PAGE).map(e =>
          [el("a", { href: href("config", { c: ci, pair: e[col("scope")], tr, m }) }, label(e)), e[col("n")], e[col("estimate")], interval(e),
            e[col("method")], e[col("p_value")], e[col("outlier_sets")]]), { id: "effects-" + m, class: "effects" }));
    }
    return out;
  }
  function interval(e) {
    const lo = e[col("ci_low")], hi = e[col("ci_high")];
    if (lo === null || hi === null) return el("span", { class: "muted" }, e[col("note")] || "none");
    return `[${fmt(lo)}, ${fmt(hi)}]` + (e[col("bounded")] === false ? " †" : "");
  }

  // config: one configuration's matched sets in run order.
  async function pageConfig(q) {
    const ci = +(q.get("c") || 0);
    const c = await campaign(ci);
    const pair = q.get("pair");
    const cell = c.cells.find(x => x.pair === pair);
    if (!cell) return [el("h1", {}, "No configuration " + pair + " in " + c.name)];
    const m = q.get("m") || "publish_ms_p99";
    const mi = c.runMetrics.indexOf(m);
    const def = c.metrics.find(x => x.name === m) || {};
    const tr = q.get("tr") || c.levels[1];
    const runs = c.runs.map((r, i) => ({ r, i })).filter(({ r }) => r[RC.pair] === pair);
    const sets = new Map();
    for (const x of runs) {
      const k = x.r[RC.replicate];
      if (!sets.has(k)) sets.set(k, { rep: k, first: x.i, runs: {} });
      if (x.r[RC.final]) sets.get(k).runs[x.r[RC.level]] = x;
    }
    const ordered = [...sets.values()].sort((a, b) => a.first - b.first);
    const val = x => x ? x.r[nRC + mi] : null;
    const healthy = x => x && x.r[RC.outcome] === "done";
    const penalty = (b, t) => (typeof b === "number" && typeof t === "number" && b !== 0) ? (def.higher ? (1 - t / b) : (t / b - 1)) * 100 : null;
    const strip = [];
    const rows = ordered.map(s => {
      const b = s.runs[c.levels[0]];
      const cols = [s.rep];
      for (const l of c.levels) {
        const x = s.runs[l];
        cols.push(x ? el("a", { href: href("run", { c: ci, run: x.r[RC.run], a: x.r[RC.attempt] }), "data-num": "1" },
          fmt(val(x)), healthy(x) ? "" : el("span", { class: "bad", title: x.r[RC.reasons] }, " ✗ " + x.r[RC.outcome]),
          (x.r[RC.outliers] || "").split(";").includes(m) ? el("span", { class: "flag", title: "outlier for " + m }, " ◆") : "") : "—");
        if (l !== c.levels[0]) {
          const p = healthy(b) && healthy(x) ? penalty(val(b), val(x)) : null;
          if (p !== null) strip.push({ level: l, rep: s.rep, penalty: p });
        }
      }
      const p = healthy(b) && healthy(s.runs[tr]) ? penalty(val(b), val(s.runs[tr])) : null;
      cols.push(p);
      return cols;
    });
    const settings = c.cellFactors.map((f, i) => [f, cell.levels[i]]);
    const eff = (await effectRows(c, null, "ratio_penalty")).filter(e => e[col("scope")] === pair && e[col("metric")] === m);
    const out = [el("h1", {}, `Configuration ${cellLabel(c, cell)} `, statusMark(c)),
      el("p", {}, el("a", { href: href("effects", { c: ci, tr, m }) }, "← effects"), ` · pair ${pair}`),
      table(["factor", "level"], settings, { class: "info" }),
      el("div", { class: "controls" }, el("fieldset", {}, el("legend", {}, "metric"),
        el("select", { id: "metric", onchange: e => go("config", { ...paramsOf(q), m: e.target.value }) },
          c.metrics.map(x => el("option", { value: x.name, selected: x.name === m }, x.name)))))];
    if (strip.length) {
      const chart = Plot.plot({
        width: 800, height: 60 + 40 * (c.levels.length - 1), marginLeft: 120,
        x: { label: `per-set penalty of ${m} (%)`, grid: true }, y: { label: null, domain: c.levels.slice(1) },
        marks: [Plot.ruleX([0], { stroke: "#888" }),
          Plot.link(eff.filter(e => e[col("ci_low")] !== null), { x1: e => e[col("ci_low")], x2: e => e[col("ci_high")], y1: e => e[0], y2: e => e[0], stroke: "#e08a00", strokeWidth: 6, strokeOpacity: 0.35 }),
          Plot.tickX(eff, { x: e => e[col("estimate")], y: e => e[0], stroke: "#e08a00", strokeWidth: 2 }),
          Plot.dot(strip, { x: "penalty", y: "level", fill: "#0b5cad", r: 4, title: d => `set ${d.rep}: ${d.penalty}` })],
      });
      out.push(figure("strip-" + pair + "-" + m, "per-set penalties (dots) and the configuration's ratio-of-means estimate and interval", chart,
        ["level", "replicate", "penalty_pct"], strip.map(d => [d.level, d.rep, d.penalty])));
    }
    out.push(el("h2", {}, "Matched sets in run order"),
      table(["set", ...c.levels.map(l => `${l} ${m}`), `penalty of ${tr} %`], rows, { id: "sets" }),
      el("p", { class: "muted" }, "✗ an unhealthy or failed run (its set leaves the effects) · ◆ a run flagged as an outlier for this metric"));
    return out;
  }

  // runs: every attempt of a campaign, paged.
  async function pageRuns(q) {
    const ci = +(q.get("c") || 0);
    const c = await campaign(ci);
    const page = +(q.get("page") || 1);
    const start = (page - 1) * PAGE;
    const shown = ["publish_ms_p99", "e2e_ms_p99"].filter(m => c.runMetrics.includes(m));
    const rows = c.runs.slice(start, start + PAGE).map(r => [
      el("a", { href: href("run", { c: ci, run: r[RC.run], a: r[RC.attempt] }) }, r[RC.run]), r[RC.attempt], r[RC.level], r[RC.outcome],
      ...shown.map(m => r[nRC + c.runMetrics.indexOf(m)])]);
    return [el("h1", {}, `Runs of ${c.name} `, statusMark(c)),
      pager(c.runs.length, page, p => go("runs", { c: ci, page: p })) || "",
      table(["run", "attempt", c.treatment, "outcome", ...shown], rows, { id: "runs" })];
  }

  // run: everything the db holds about one attempt.
  async function pageRun(q) {
    const ci = +(q.get("c") || 0);
    const c = await campaign(ci);
    const id = q.get("run"), att = +(q.get("a") || 0);
    let i = c.runs.findIndex(r => r[RC.run] === id && (att ? r[RC.attempt] === att : r[RC.final]));
    if (i < 0) return [el("h1", {}, "No run " + id + " in " + c.name)];
    const r = c.runs[i];
    const chunk = await load(`c${ci}-r${Math.floor(i / c.runsPerChunk)}`, site.live);
    const d = chunk.find(x => x.index === i) || {};
    const out = [el("h1", {}, `Run ${r[RC.run]}, attempt ${r[RC.attempt]} `, statusMark(c)),
      el("p", {}, el("a", { href: href("config", { c: ci, pair: r[RC.pair], tr: r[RC.level] === c.levels[0] ? c.levels[1] : r[RC.level] }) }, "← configuration"),
        ` · ${c.treatment} ${r[RC.level]} · replicate ${r[RC.replicate]} · `,
        el("span", { id: "outcome", class: r[RC.outcome] === "done" ? "" : "bad" }, r[RC.outcome]), r[RC.reasons] ? " (" + r[RC.reasons] + ")" : "",
        r[RC.superseded] ? " · superseded: " + r[RC.superseded] : "")];
    out.push(el("div", { class: "grid2" },
      el("div", {}, el("h2", {}, "Results"), table(["metric", "value"], c.runMetrics.map((m, k) => [m, r[nRC + k]]).filter(x => x[1] !== null),
        { id: "run-metrics", rowAttrs: x => ({ "data-metric": x[0] }) })),
      el("div", {}, el("h2", {}, "Settings"), table(["field", "value"], Object.entries(d.settings || {}).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]), { class: "info", id: "settings" }))));
    const env = flatten(d.environment || {});
    out.push(el("h2", {}, "Environment"),
      env.length ? table(["", ""], env, { class: "info", id: "environment" }) : el("p", { class: "muted", id: "environment" }, "not recorded"),
      el("details", {}, el("summary", {}, "as recorded (JSON)"), el("pre", {}, JSON.stringify(d.environment || {}, null, 2))));
    if (d.phases && d.phases.length) {
      const ph = d.phases.map((p, k) => [p.name, p.at, p.s, k + 1 < d.phases.length ? d.phases[k + 1].s - p.s : null]);
      out.push(el("h2", {}, "Phases"), table(["phase", "began (UTC)", "at s", "lasted s"], ph, { id: "phases" }));
    }
    const pct = [];
    for (const [kind, pts] of Object.entries(d.percentiles || {})) for (const [p, ms] of pts) if (p < 100) pct.push({ kind, p, ms, x: 1 / (1 - p / 100) });
    if (pct.length) {
      const ticks = [1, 2, 10, 100, 1000, 10000, 100000];
      const chart = Plot.plot({
        width: 700, height: 320, marginLeft: 60, color: { legend: true },
        x: { type: "log", label: "percentile", ticks, tickFormat: t => t === 1 ? "0" : String(+(100 - 100 / t).toPrecision(6)), grid: true },
        y: { type: "log", label: "latency (ms)", grid: true, tickFormat: "~g" },
        marks: [Plot.line(pct, { x: "x", y: "ms", stroke: "kind", title: d => `${d.kind} p${d.p}: ${d.ms} ms` })],
      });
      out.push(figure("percentiles-" + r[RC.run], "latency by percentile, from the stored HDR histograms", chart,
        ["kind", "percentile", "ms"], pct.map(d => [d.kind, d.p, d.ms])));
    }
    if (d.series && d.series.length) {
      const s = d.series.flatMap(([sec, pub, con, bl]) => [{ sec, what: "published", v: pub }, { sec, what: "consumed", v: con }]);
      const charts = [figure("rate-" + r[RC.run], "messages a second" + (d.seriesSampled ? " (sampled)" : ""),
        Plot.plot({ width: 560, height: 220, color: { legend: true }, x: { label: "second", tickFormat: "d" }, y: { label: "msg/s", grid: true, zero: true },
          marks: [Plot.line(s, { x: "sec", y: "v", stroke: "what" }), Plot.dot(s, { x: "sec", y: "v", fill: "what", r: 2 })] }),
        ["second", "published", "consumed", "backlog", "publish_p99_ms", "e2e_p99_ms"], d.series),
      figure("backlog-" + r[RC.run], "backlog (records)", Plot.plot({ width: 560, height: 220, x: { label: "second", tickFormat: "d" }, y: { label: "records", grid: true, zero: true, domain: [0, Math.max(1, ...d.series.map(x => x[3]))] },
        marks: [Plot.areaY(d.series, { x: d => d[0], y: d => d[3], fill: "#9bb8d8" })] }),
        ["second", "backlog"], d.series.map(x => [x[0], x[3]]))];
      const lat = d.series.flatMap(x => [x[4] !== null ? { sec: x[0], what: "publish p99", v: x[4] } : null, x[5] !== null ? { sec: x[0], what: "e2e p99", v: x[5] } : null]).filter(Boolean);
      if (lat.length) charts.push(figure("latency-" + r[RC.run], "p99 latency a second (ms)", Plot.plot({ width: 560, height: 220, color: { legend: true },
        x: { label: "second", tickFormat: "d" }, y: { label: "ms", grid: true, zero: true }, marks: [Plot.line(lat, { x: "sec", y: "v", stroke: "what" }), Plot.dot(lat, { x: "sec", y: "v", fill: "what", r: 2 })] }),
        ["second", "what", "ms"], lat.map(x => [x.sec, x.what, x.v])));
      out.push(el("h2", {}, "Per second"), el("div", { class: "grid2" }, charts));
    }
    if (d.telemetry && d.telemetry.length) {
      out.push(el("h2", {}, "Host telemetry by role"));
      const roles = [...new Set(d.telemetry.map(t => t.role))];
      for (const role of roles) {
        const figs = [];
        const ts = d.telemetry.filter(t => t.role === role);
        for (const metric of [...new Set(ts.map(t => t.metric))]) {
          const pts = ts.filter(t => t.metric === metric).flatMap(t => t.points.map(([s, v]) => ({ host: t.host, s, v })));
          const unit = ts.find(t => t.metric === metric).unit;
          figs.push(figure(`telemetry-${role}-${metric}`, `${role}: ${metric} (${unit})`, Plot.plot({ width: 560, height: 200, color: { legend: true },
            x: { label: "s from start" }, y: { label: unit, grid: true }, marks: [Plot.line(pts, { x: "s", y: "v", stroke: "host" })] }),
            ["host", "s", unit], pts.map(p => [p.host, p.s, p.v])));
        }
        out.push(el("h3", {}, role), el("div", { class: "grid2" }, figs));
      }
    }
    if (d.logs && d.logs.length) {
      out.push(el("h2", {}, "Logs"), d.logs.map(l => el("details", { open: r[RC.outcome] !== "done" }, el("summary", {}, l.name), el("pre", {}, l.text))));
    }
    return out;
  }

  // flatten lists an object's leaves as [path, value] (broker.kind,
  // gateway_crypto.cipher, machines.0.name), lists of plain values joined.
  function flatten(v, path, out) {
    out = out || [];
    if (v !== null && typeof v === "object") {
      if (Array.isArray(v) && v.every(x => x === null || typeof x !== "object")) out.push([path, v.join(", ")]);
      else for (const [k, x] of Object.entries(v)) flatten(x, path ? path + "." + k : k, out);
    } else out.push([path, String(v)]);
    return out;
  }

  // compare: xp compare's comparison of two campaigns, headline row by
  // headline row over the configurations they share.
  async function pageCompare(q) {
    const comps = await load("compare", site.live);
    const a = +(q.get("a") || 0), b = +(q.get("b") || 1);
    const cmp = comps.find(x => x.a === Math.min(a, b) && x.b === Math.max(a, b));
    const only = q.get("only") || "";
    const pick = (k, v) => el("select", { id: "cmp-" + k, onchange: e => go("compare", { ...paramsOf(q), [k]: e.target.value }) },
      site.campaigns.map(s => el("option", { value: s.index, selected: s.index === v }, s.name + " (" + s.db + ")")));
    const out = [el("h1", {}, "Does it replicate? Two campaigns side by side"), el("div", { class: "controls" },
      el("fieldset", {}, el("legend", {}, "A"), pick("a", a)), el("fieldset", {}, el("legend", {}, "B"), pick("b", b)),
      el("fieldset", {}, el("legend", {}, "rows"), el("select", { id: "cmp-only", onchange: e => go("compare", { ...paramsOf(q), only: e.target.value }) },
        [["", "every headline row"], ["not", "rows that do not replicate"]].map(([v, t]) => el("option", { value: v, selected: v === only }, t)))))];
    if (!cmp) return out.concat(el("p", {}, "Pick two different campaigns."));
    if (cmp.error) out.push(el("p", { class: "bad", id: "cmp-error" }, cmp.error));
    // The page shows A as picked; the comparison is stored with the lower index as A.
    const swap = cmp.a !== a;
    const flip = x => swap ? { ...x, estA: x.estB, estB: x.estA, bInA: x.aInB, aInB: x.bInA,
      in: x.in === "only A" ? "only B" : x.in === "only B" ? "only A" : x.in } : x;
    let rows = cmp.rows.map(flip);
    const replicated = rows.filter(x => x.replicated === "yes").length;
    const la = swap ? cmp.labelB : cmp.labelA, lb = swap ? cmp.labelA : cmp.labelB;
    out.push(el("p", { id: "cmp-summary" }, `${rows.length} headline rows (ratio-of-means penalty, %, pooled over the ${cmp.shared} configurations both campaigns have); ` +
      `${replicated} replicate (each estimate inside the other's ${Math.round(cmp.confidence * 100)}% interval), ${rows.length - replicated} do not or cannot be judged. As xp compare ${la} ${lb} prints it.`));
    if (cmp.notes.length) out.push(el("ul", {}, cmp.notes.map(n => el("li", { class: "muted" }, n))));
    if (only === "not") rows = rows.filter(x => x.replicated !== "yes");
    const iv = v => v ? `${fmt(v.est)} [${fmt(v.low)}, ${fmt(v.high)}]` : "—";
    const yn = v => v === "yes" ? "yes" : v ? el("span", { class: "bad" }, v) : "—";
    const both = rows.filter(x => x.estA && x.estB);
    if (both.length) {
      const lo = Math.min(...both.map(x => Math.min(x.estA.est, x.estB.est))), hi = Math.max(...both.map(x => Math.max(x.estA.est, x.estB.est)));
      const chart = Plot.plot({ width: 640, height: 480, grid: true, x: { label: `A: ${la} estimate (%)` }, y: { label: `B: ${lb} estimate (%)` },
        color: { legend: true, domain: ["yes", "no", "no interval"], range: ["#1e7a34", "#b3261e", "#888"] },
        marks: [Plot.line([[lo, lo], [hi, hi]], { stroke: "#aaa" }),
          Plot.link(both.filter(x => x.estA.low !== null), { x1: x => x.estA.low, x2: x => x.estA.high, y1: x => x.estB.est, y2: x => x.estB.est, stroke: "#bbb" }),
          Plot.link(both.filter(x => x.estB.low !== null), { x1: x => x.estA.est, x2: x => x.estA.est, y1: x => x.estB.low, y2: x => x.estB.high, stroke: "#bbb" }),
          Plot.dot(both, { x: x => x.estA.est, y: x => x.estB.est, fill: x => x.replicated, r: 3.5, title: x => `${x.treatment} ${x.metric} ${x.scope}` })] });
      const header = ["treatment", "metric", "scope", "in", "est_a", "low_a", "high_a", "est_b", "low_b", "high_b", "b_in_a", "a_in_b", "signs_agree", "replicated",
        "fixed_est", "fixed_low", "fixed_high", "random_est", "random_low", "random_high", "i2_pct", "note"];
      const v = (x, k) => x ? x[k] : null;
      const csvRows = rows.map(x => [x.treatment, x.metric, x.scope, x.in, v(x.estA, "est"), v(x.estA, "low"), v(x.estA, "high"), v(x.estB, "est"), v(x.estB, "low"), v(x.estB, "high"),
        x.bInA, x.aInB, x.signsAgree, x.replicated, v(x.fixed, "est"), v(x.fixed, "low"), v(x.fixed, "high"), v(x.random, "est"), v(x.random, "low"), v(x.random, "high"), x.i2, x.note]);
      out.push(figure(`compare-${a}-${b}`, "estimates of A against B, with their intervals", chart, header, csvRows));
    }
    const page = +(q.get("page") || 1), start = (page - 1) * PAGE;
    out.push(pager(rows.length, page, p => go("compare", { ...paramsOf(q), page: p })) || "",
      table(["treatment", "metric", "scope", "A", "B", "B in A", "A in B", "signs agree", "replicated", "fixed effect", "random effects", "I² %", "note"],
        rows.slice(start, start + PAGE).map(x => [x.treatment, x.metric, x.scope + (x.in !== "both" ? ` (${x.in})` : ""), iv(x.estA), iv(x.estB),
          yn(x.bInA), yn(x.aInB), yn(x.signsAgree), yn(x.replicated), iv(x.fixed), iv(x.random), x.i2, x.note]), { id: "compare" }));
    return out;
  }

  const pages = { campaigns: pageCampaigns, effects: pageEffects, config: pageConfig, runs: pageRuns, run: pageRun, compare: pageCompare };

  async function render() {
    const seq = ++renderSeq;
    const { page, q } = route();
    const fn = pages[page] || pageCampaigns;
    nav(page, q.get("c") || 0);
    const main = document.getElementById("main");
    try {
      const kids = await fn(q);
      if (seq !== renderSeq) return;
      const y = window.scrollY;
      main.replaceChildren(...[kids].flat(2).filter(k => k !== null && k !== undefined && k !== ""));
      window.scrollTo(0, y);
      document.body.dataset.readyMs = String(performance.now());
      document.body.dataset.ready = location.hash;
    } catch (e) {
      if (seq !== renderSeq) return;
      main.replaceChildren(el("p", { class: "bad" }, "Cannot show this page: " + e.message));
      document.body.dataset.ready = "error";
    }
  }

  async function start() {
    if (!location.hash) history.replaceState(null, "", "#/campaigns");
    site = await load("site");
    window.addEventListener("hashchange", render);
    await render();
    if (site.live) {
      setInterval(async () => {
        try { site = await load("site", true); } catch (e) { return; }
        await render();
      }, 2000);
    }
  }

  document.addEventListener("DOMContentLoaded", start);
  return { put, load, href, csvText };
})();
