// quiltpriv explorer: the auditor's panel (a published plan or release record, verified,
// audited and reported on). Every check is the Python server's (quiltpriv.explorer.published,
// the same code as quiltpriv verify / audit / report --record); this script sends the file and
// the options and shows the answers, as text (textContent) except the server's escaped drawing.
"use strict";

(() => {
  // The page's helpers (explorer.js, loaded first): one element builder and one API client.
  const {token, $, el, sleep, set, api} = window.quiltprivExplorer;
  let verifyJob = null;

  const fmt = (x) => (x === null || x === undefined ? "-" : typeof x === "string" ? x
    : x === 0 ? "0" : String(Number(x.toPrecision(6))));

  function status(text, isError) {
    const s = $("pub-status");
    s.textContent = text || "";
    s.className = isError ? "error" : "";
    document.body.dataset.audit = isError ? "error" : (document.body.dataset.audit || "");
  }

  async function wait(id, current) {
    for (;;) {
      const s = await api("GET", `/api/jobs/${id}`);
      if (!current()) return null;
      if (s.state !== "running") return s;
      $("pub-status").textContent = `${s.phase} (${s.seconds.toFixed(1)} s)`;
      await sleep(120);
    }
  }

  // -- loading ---------------------------------------------------------------------------------
  function shown(doc) {
    $("pub-doc").textContent = !doc ? "nothing loaded" :
      `${doc.kind === "record" ? "release record" : "plan"} ${doc.name} (${doc.bytes} bytes, ` +
      `sha256 ${doc.sha256.slice(0, 12)}\u2026): protects ${set(doc.sensitive)}, ` +
      `epsilon ${fmt(doc.epsilon)}, scale ${fmt(doc.scale)}` +
      (doc.kind === "record" ? `, published value ${fmt(doc.value)}` : "");
    $("pub-verify").disabled = !doc;
    $("pub-report").disabled = !doc;
    document.body.dataset.published = doc ? doc.kind : "";
  }

  async function load(body) {
    $("published").hidden = true;
    document.body.dataset.audit = "loading";
    try {
      const r = await api("POST", "/api/published", body);
      shown(r.document);
      status(`loaded ${r.document.name}`);
      document.body.dataset.audit = "loaded";
    } catch (e) {
      status(e.message, true);
    }
  }

  function loadFile() {
    const f = $("pub-file").files[0];
    if (!f) return;
    const reader = new FileReader();
    reader.onload = () => load({text: String(reader.result), name: f.name});
    reader.onerror = () => status(`cannot read ${f.name}`, true);
    reader.readAsText(f);
  }

  // -- verifying -----------------------------------------------------------------------------
  function options() {
    const o = {audit: $("pub-audit").checked, fragility: $("pub-fragility").checked};
    for (const [id, key] of [["pub-data", "data"], ["pub-ledger", "ledger"],
                             ["pub-delta", "delta"]]) {
      const v = $(id).value.trim();
      if (v) o[key] = v;
    }
    return o;
  }

  function table(id, head, rows) {
    const t = $(id);
    t.replaceChildren(el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows));
  }

  function render(r) {
    $("published").hidden = false;
    const v = $("pub-verdict");
    v.dataset.verified = String(r.verified);
    v.replaceChildren(el("span", {class: "badge " + (r.verified ? "ok" : "warn")},
      r.verified ? "VERIFIED" : "FAILED"), " ",
      r.verified ? `against the model (fingerprint ${r.fingerprint.slice(0, 12)}\u2026)`
        : r.failure);
    table("pub-checks", ["check", "result", "detail"], (r.checks || []).map((c) =>
      el("tr", {"data-check": c.name, class: c.ok ? "" : "failed"}, el("td", {}, c.name),
        el("td", {}, c.ok ? "OK" : "FAILED"), el("td", {}, c.detail))));
    $("pub-checks").hidden = !r.checks;
    $("pub-values").hidden = r.true_value === null || r.true_value === undefined;
    $("pub-values").textContent = $("pub-values").hidden ? "" :
      `published value ${fmt(r.published_value)}; true value on the data ` +
      `${fmt(r.true_value)}; noise actually added ${fmt(r.noise_added)}`;
    table("pub-attained", ["sensitive", "quilt Q", "e(Q|i)", "\u0394 A\u2229N", "\u03b5 attained",
                           "note"],
      (r.attained || []).map((a) => el("tr", {"data-node": a.node, "data-epsilon": a.epsilon},
        el("td", {}, a.node), el("td", {}, set(a.quilt)), el("td", {class: "num"}, fmt(a.influence)),
        el("td", {class: "num"}, fmt(a.sensitivity)), el("td", {class: "num"}, fmt(a.epsilon)),
        el("td", {}, [a.binding ? "sets b" : "", a.near_limit ? "near the limit" : ""]
          .filter(Boolean).join(", ") || "-"))));
    const fr = r.fragility;
    table("pub-fragility", ["sensitive", "verdict", "what a change of one table does"],
      fr ? fr.rows.map((x) => el("tr", {"data-node": x.node, "data-verdict": x.verdict,
        class: x.fragile ? "failed" : ""}, el("td", {}, x.node), el("td", {}, x.verdict),
        el("td", {}, x.witness ? `P(${x.witness.node} | ${Object.entries(x.witness.column)
          .map(([p, s]) => `${p} = ${s}`).join(", ")}) in member ${x.witness.member}: ` +
          `${x.witness.before.map(fmt).join(", ")} \u2192 ${x.witness.after.map(fmt).join(", ")}` +
          ` gives e(Q|i) = ${fmt(x.witness.influence)}; least change ${fmt(x.least_change)}` +
          (x.replanned_scale !== null ? `; the scale then needed: ${fmt(x.replanned_scale)}` : "")
          : `at most ${fmt(x.bound)} after a change of at most ${fmt(fr.delta)}` +
          (x.complete ? "" : " (cut short by the time limit)")))) : []);
    $("pub-fragility").hidden = !fr;
    $("pub-audit").textContent = !r.audit ? "" : r.audit.run ?
      `exact audit at the published scale ${fmt(r.audit.scale)}: ${r.audit.verdict}, ` +
      `worst-case loss ${fmt(r.audit.loss)} against \u03b5 ${fmt(r.audit.epsilon)}; per ` +
      `attribute: ${Object.entries(r.audit.per_attribute).map(([k, x]) =>
        `${k} ${fmt(x.loss)} ${x.verdict}`).join(", ")}. ${r.audit.least_scale_text}`
      : `exact audit not run: ${r.audit.why}`;
    $("pub-audit").dataset.verdict = r.audit && r.audit.run ? r.audit.verdict : "";
    const quilts = $("pub-quilts");
    quilts.replaceChildren(...(r.quilts || []).map((q) => {
      const fig = el("figure", {class: "published-dag"});
      fig.innerHTML = q.svg;  // drawn and escaped by dag_svg on the server
      const rows = q.candidates.rows.map((c) => el("tr", {
        class: c.chosen ? "chosen" : "", "data-quilt": JSON.stringify(c.quilt)},
        el("td", {}, c.chosen ? "\u2605 " + set(c.quilt) : set(c.quilt)),
        el("td", {class: "num"}, fmt(c.influence)), el("td", {class: "num"}, fmt(c.sensitivity)),
        el("td", {class: "num"}, fmt(c.scale))));
      return el("section", {"data-node": q.node},
        el("h4", {}, `${q.node}: published quilt ${set(q.quilt)}, scale ${fmt(q.scale)}`), fig,
        el("div", {class: "table-wrap"}, el("table", {}, el("thead", {}, el("tr", {},
          ...["Q", "e(Q|i)", "\u0394 A\u2229N", "scale"].map((h) => el("th", {}, h)))),
          el("tbody", {}, ...rows))),
        el("p", {class: "why"}, q.candidates.why));
    }));
    $("pub-other").hidden = !r.other_model;
    $("pub-other").textContent = r.other_model ? r.other_model.text : "";
    $("pub-text").textContent = r.text;
  }

  async function verify() {
    const mine = {};
    verifyJob = mine;
    document.body.dataset.audit = "verifying";
    status("verifying\u2026");
    try {
      const id = (await api("POST", "/api/published/verify", options())).job;
      const s = await wait(id, () => verifyJob === mine);
      if (!s) return;
      if (s.state === "done") {
        render(s.result);
        status(`verified in ${s.seconds.toFixed(2)} s`);
        document.body.dataset.audit = "ready";
      } else {
        status(s.state === "error" ? s.error : "cancelled", true);
      }
    } catch (e) {
      status(e.message, true);
    }
  }

  async function report() {
    const body = {path: $("pub-report-path").value, audit: $("pub-audit").checked};
    const ledger = $("pub-ledger").value.trim();
    if (ledger) body.ledger = ledger;
    document.body.dataset.report = "writing";
    status("writing the signed report\u2026");
    try {
      const id = (await api("POST", "/api/published/report", body)).job;
      const s = await wait(id, () => true);
      if (s.state === "done") {
        status(`wrote ${s.result.html} and ${s.result.json}`);
        document.body.dataset.report = "done";
      } else {
        status(s.state === "error" ? s.error : "cancelled", true);
        document.body.dataset.report = "error";
      }
    } catch (e) {
      status(e.message, true);
      document.body.dataset.report = "error";
    }
  }

  async function start() {
    if (!token) return;
    $("pub-file").addEventListener("change", loadFile);
    $("pub-load").addEventListener("click", () => load({path: $("pub-path").value}));
    $("pub-verify").addEventListener("click", verify);
    $("pub-report").addEventListener("click", report);
    try { shown((await api("GET", "/api/published")).document); } catch (e) {
      status(e.message, true);
    }
  }

  document.addEventListener("DOMContentLoaded", start);
})();
