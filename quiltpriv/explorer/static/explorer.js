// quiltpriv explorer: the page's script (hand-written, no build step, no external resources).
// Every computation is the Python server's; this script only sends the inputs and shows the
// answers. Text from the server is put into the page as text (textContent), never as markup,
// except the network drawing, which the server escapes when it draws it.
"use strict";

(() => {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  let model = null;          // GET /api/model
  let planJob = null;        // id of the plan job whose answer the page waits for
  let result = null;         // the last plan shown
  let tab = null;            // name of the sensitive attribute shown
  let editing = null;        // {node, member} of the conditional table shown
  let timer = null;

  // -- helpers -------------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  function fmt(x) {
    if (x === null || x === undefined) return "too large to compute";
    if (typeof x === "string") return x;  // "inf"
    if (x === 0) return "0";
    return String(Number(x.toPrecision(6)));
  }
  const set = (xs) => "{" + (xs || []).join(", ") + "}";

  async function api(method, path, body) {
    const opts = {method, headers: {"X-Quiltpriv-Token": token}};
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    let data;
    try { data = await r.json(); } catch (e) { data = {error: `HTTP ${r.status}`}; }
    if (!r.ok) {
      const err = new Error(data.error || `HTTP ${r.status}`);
      err.status = r.status;
      throw err;
    }
    return data;
  }

  // The auditor's panel (audit.js, loaded after this script) uses the same helpers.
  window.quiltprivExplorer = Object.freeze({token, $, el, sleep, set, api});

  function showError(box, message) {
    $(box).hidden = !message;
    $(box).textContent = message || "";
  }

  // The plan on screen no longer answers the inputs (they failed to plan, or the plan was
  // cancelled): it stays for reference, dimmed under a notice, until a plan succeeds.
  function markStale(why) {
    const stale = Boolean(why) && result !== null;
    document.body.dataset.stale = stale ? "true" : "false";
    $("stale").hidden = !stale;
    $("stale").textContent = stale ? `Out of date: ${why}. The plan below is for the last ` +
      "inputs that planned (\u03b5 = " + result.epsilon + "); it does not answer the inputs " +
      "now on the left." : "";
  }

  function checked(listId) {
    return [...$(listId).querySelectorAll("input:checked")].map((i) => i.value);
  }

  // -- the model ---------------------------------------------------------------------------------
  function showModel(m) {
    model = m;
    $("model-info").textContent = `${m.spec}: ${m.nodes.length} nodes, ${m.edges.length} edges, ` +
      `|\u0398| = ${m.members.length}; fingerprint ${m.fingerprint.slice(0, 12)}\u2026`;
    $("edited").hidden = !m.edited;
    $("undo").disabled = m.undo === 0;
    $("undo").textContent = m.undo ? `Undo (${m.undo})` : "Undo";
    $("undo").title = m.history.length ? "undo: " + m.history[m.history.length - 1] : "";
    document.body.dataset.fingerprint = m.fingerprint;
    if (!result) drawing(m.svg);
    showProvenance(m);
  }

  // -- where the model came from -------------------------------------------------------------
  // The provenance record of the model as loaded (a learned Theta's data hash, bins, search and
  // estimator settings), for a person: a definition list, the learned parameters' bins as a
  // table, edges as arrows. It comes from a model file, so it is put in as text only.
  const MAX_DEPTH = 6;
  const isScalar = (v) => v === null || ["string", "number", "boolean"].includes(typeof v);
  function scalarText(v) {
    if (v === null) return "none";
    if (typeof v === "boolean") return v ? "yes" : "no";
    return String(v);
  }
  function provValue(key, v, depth) {
    if (isScalar(v)) {
      return el(typeof v === "string" && /^[0-9a-f]{40,128}$/.test(v) ? "code" : "span",
        {class: v === null ? "none" : null}, scalarText(v));
    }
    if (depth >= MAX_DEPTH) return el("code", {}, JSON.stringify(v));
    if (Array.isArray(v)) {
      if (!v.length) return el("span", {class: "none"}, "none");
      if (v.every(isScalar)) return el("span", {}, v.map(scalarText).join(", "));
      if (/edge/.test(key) && v.every((x) => Array.isArray(x) && x.length === 2 &&
          x.every(isScalar))) {
        return el("span", {}, v.map(([a, b]) => `${scalarText(a)} \u2192 ${scalarText(b)}`)
          .join(", "));
      }
      return el("ol", {}, ...v.map((x) => el("li", {}, provValue(key, x, depth + 1))));
    }
    const entries = Object.entries(v);
    if (!entries.length) return el("span", {class: "none"}, "none");
    const fields = [...new Set(entries.flatMap(([, x]) =>
      (x && typeof x === "object" && !Array.isArray(x) ? Object.keys(x) : [null])))];
    if (entries.length > 1 && !fields.includes(null) && fields.length <= 8) {
      return el("div", {class: "table-wrap"}, el("table", {class: "prov"},
        el("thead", {}, el("tr", {}, el("th", {}), ...fields.map((f) =>
          el("th", {}, f.replaceAll("_", " "))))),
        el("tbody", {}, ...entries.map(([name, x]) => el("tr", {}, el("th", {}, name),
          ...fields.map((f) => el("td", {}, f in x ? provValue(f, x[f], depth + 2) : "")))))));
    }
    return provList(v, depth + 1);
  }
  function provList(obj, depth) {
    return el("dl", {class: "prov"}, ...Object.entries(obj).flatMap(([k, v]) => [
      el("dt", {}, k.replaceAll("_", " ")), el("dd", {}, provValue(k, v, depth))]));
  }
  function showProvenance(m) {
    const p = m.provenance;
    $("provenance").replaceChildren(...(p && typeof p === "object" && Object.keys(p).length
      ? [provList(p, 0)] : []));
    $("provenance-note").textContent = !p ? "Not recorded: the model was not built or " +
      "learned by quiltpriv." : (m.edited ? "This describes the model as loaded; it has been " +
      "edited since, so its tables are no longer the ones recorded here (an edited model is " +
      "saved without provenance)." : "");
  }

  function fillChecks(listId, names, on, onchange) {
    const box = $(listId);
    box.replaceChildren(...names.map((n) => el("label", {},
      el("input", {type: "checkbox", value: n, checked: on.includes(n),
        onchange: onchange || schedule}), n)));
  }

  // The query's per-attribute fields (A=...,B=...) follow the attribute list: an entry of an
  // attribute no longer queried is taken out (and put back if the attribute comes back), so
  // the categories of the previous attributes are never sent with the new ones.
  const PER_ATTRIBUTE = ["q-categories", "q-record-states"];
  const setAside = {};       // input id -> {attribute: "A=..." entry taken out}
  function followAttributes() {
    const attrs = new Set(checked("attr-list"));
    for (const id of PER_ATTRIBUTE) {
      const input = $(id);
      const aside = setAside[id] || (setAside[id] = {});
      const items = input.value.split(",").map((x) => x.trim()).filter(Boolean);
      const keep = [];
      for (const item of items) {
        const name = item.split("=")[0].trim();
        if (item.includes("=") && !attrs.has(name)) {
          aside[name] = item;
        } else {
          keep.push(item);
          delete aside[name];
        }
      }
      for (const name of Object.keys(aside)) {
        if (attrs.has(name)) { keep.push(aside[name]); delete aside[name]; }
      }
      const text = keep.join(",");
      if (text !== items.join(",")) input.value = text;
    }
    // Every entry set aside so far (not only this change's), until its attribute comes back.
    const names = [...new Set(PER_ATTRIBUTE.flatMap((id) => Object.keys(setAside[id])))];
    $("attr-note").hidden = !names.length;
    $("attr-note").textContent = names.length ? `set aside the categories/record states of ` +
      `${names.join(", ")} (no longer a query attribute; they come back with it)` : "";
    schedule();
  }

  function applyInitial(m) {
    const init = m.initial || {};
    const names = m.nodes.map((n) => n.name);
    const list = (x) => (Array.isArray(x) ? x : String(x || "").split(",").map((s) => s.trim())
      .filter(Boolean));
    const q = init.query || {};
    const sens = init.sensitive ? list(init.sensitive) : [names[0]];
    const attrs = q.attributes ? list(q.attributes)
      : [names[names.length - 1] === sens[0] ? names[0] : names[names.length - 1]];
    fillChecks("sensitive-list", names, sens);
    fillChecks("attr-list", names, attrs, followAttributes);
    $("q-kind").value = q.kind || "count";
    for (const input of document.querySelectorAll("[data-field]")) {
      const v = q[input.dataset.field];
      if (v !== undefined && v !== null) input.value = String(v);
    }
    if (init.epsilon !== undefined) $("eps").value = String(init.epsilon);
    if (init.time_limit !== undefined) $("time-limit").value = String(init.time_limit);
    syncSlider();
    showKind();
  }

  // -- inputs ------------------------------------------------------------------------------------
  function showKind() {
    const kind = $("q-kind").value;
    for (const f of document.querySelectorAll(".field")) {
      f.hidden = !f.dataset.kinds.split(" ").includes(kind);
    }
  }

  function request() {
    const kind = $("q-kind").value;
    const query = {kind};
    if (kind !== "linear") query.attributes = checked("attr-list");
    for (const input of document.querySelectorAll("[data-field]")) {
      const field = input.closest(".field");
      if (field && !field.hidden && input.value.trim() !== "") {
        query[input.dataset.field] = input.value.trim();
      }
    }
    return {sensitive: checked("sensitive-list"), epsilon: $("eps").value.trim(), query,
            time_limit: $("time-limit").value.trim(), compare: $("do-compare").checked};
  }

  function syncSlider() {
    const e = Number($("eps").value);
    if (Number.isFinite(e) && e > 0) $("eps-slider").value = String(Math.log10(e));
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(replan, 200);
  }

  // -- planning jobs --------------------------------------------------------------------------
  function busy(on, phase) {
    document.body.dataset.state = on ? "busy" : (document.body.dataset.state === "busy"
      ? "ready" : document.body.dataset.state);
    $("cancel").hidden = !on;
    if (phase !== undefined) $("phase").textContent = phase;
  }

  async function replan() {
    if (planJob) api("POST", `/api/jobs/${planJob}/cancel`).catch(() => {});
    planJob = null;
    let id;
    try {
      id = (await api("POST", "/api/plan", request())).job;
    } catch (e) {
      showError("error", e.message);
      markStale("these inputs could not be planned");
      document.body.dataset.state = "error";
      busy(false, "");
      return;
    }
    planJob = id;
    busy(true, "planning");
    await follow(id, (s) => {
      if (s.state === "done") {
        showError("error", null);
        render(s.result);
        markStale(null);
        document.body.dataset.state = "ready";
      } else if (s.state === "error") {
        showError("error", s.error);
        markStale("these inputs could not be planned");
        document.body.dataset.state = "error";
      } else if (s.state === "cancelled") {
        markStale("the plan of the current inputs was cancelled");
      }
    }, () => planJob === id);
    if (planJob === id) { planJob = null; busy(false); }
  }

  async function follow(id, done, current) {
    for (;;) {
      let s;
      try { s = await api("GET", `/api/jobs/${id}`); } catch (e) {
        if (current()) done({state: "error", error: e.message});
        return;
      }
      if (!current()) return;
      $("progress").max = Math.max(1, s.total);
      $("progress").value = s.done;
      $("phase").textContent = `${s.phase}${s.total ? ` ${s.done}/${s.total}` : ""} ` +
        `(${s.seconds.toFixed(1)} s)`;
      if (s.state !== "running") {
        if (s.state === "cancelled") $("phase").textContent = "cancelled";
        else if (s.state === "done") $("phase").textContent = `done in ${s.seconds.toFixed(2)} s`;
        done(s);
        return;
      }
      await sleep(120);
    }
  }

  // -- the answer ------------------------------------------------------------------------------
  function drawing(svg) {
    const fig = $("drawing");
    fig.innerHTML = svg;  // drawn and escaped by quiltpriv.reporting.drawing.dag_svg on the server
    for (const g of fig.querySelectorAll("g.node")) {
      g.addEventListener("click", () => openEditor(g.dataset.node));
      if (editing && g.dataset.node === editing.node) g.classList.add("selected");
    }
  }

  function render(r) {
    result = r;
    document.body.dataset.resultFingerprint = r.fingerprint;
    const s = $("summary");
    s.replaceChildren(
      el("p", {},
        el("span", {class: "big", id: "overall-scale", "data-value": String(r.scale),
          "data-epsilon": String(r.epsilon)},
          `Laplace scale b = ${fmt(r.scale)}`), " ",
        el("span", {class: "badge " + (r.optimal ? "ok" : "warn"), id: "optimal"},
          r.optimal ? "exact: least over all quilts" : "optimality not proven"),
        ` \u03b5 = ${r.epsilon}; \u0394A F = ${fmt(r.delta_A)}; ${r.seconds} s`),
      ...[...r.notes, ...r.explorer_notes].map((n) => el("p", {class: "hint"}, "note: " + n)));
    const names = r.sensitive.map((sp) => sp.node);
    if (!names.includes(tab)) tab = names[0];
    $("tabs").replaceChildren(...names.map((n) => el("button", {
      type: "button", "aria-selected": n === tab ? "true" : "false", "data-node": n,
      onclick: () => { tab = n; render(result); }}, n)));
    const sp = r.sensitive.find((x) => x.node === tab);
    drawing(sp.svg);
    let where = "";
    if (sp.influence_member !== null && sp.influence_pair) {
      where = ` (under member ${sp.influence_member}, \u03c6 = ${sp.influence_pair[0]} vs ` +
        `${sp.influence_pair[1]})`;
    }
    const facts = [["quilt Q", set(sp.quilt), "quilt"], ["nearby N", set(sp.nearby), "nearby"],
      ["remote R", set(sp.remote), "remote"],
      ["max-influence e(Q|i)", fmt(sp.influence) + where, "influence"],
      ["\u0394A\u2229N F", fmt(sp.sensitivity), "sensitivity"],
      ["Laplace scale b_i", fmt(sp.scale), "scale"],
      ["optimal", sp.optimal ? "proven least over all quilts" : "not proven", "optimal"]];
    $("facts").replaceChildren(
      el("table", {class: "kv"}, ...facts.map(([k, v, id]) => el("tr", {},
        el("th", {}, k), el("td", {id: "fact-" + id,
          "data-value": JSON.stringify(sp[id] === undefined ? null : sp[id])}, v)))),
      el("p", {}, sp.explanation));
    const body = $("candidates").tBodies[0];
    const c = sp.candidates;
    body.replaceChildren(...(c ? c.rows : []).map((row) => el("tr", {
      class: row.chosen ? "chosen" : null, "data-quilt": JSON.stringify(row.quilt),
      "data-influence": String(row.influence), "data-sensitivity": String(row.sensitivity),
      "data-scale": String(row.scale)},
    el("td", {}, row.trivial ? "(trivial) {}" : set(row.quilt)),
    el("td", {class: "num"}, row.nearby.length), el("td", {}, set(row.nearby)),
    el("td", {class: "num"}, fmt(row.influence)), el("td", {class: "num"}, fmt(row.sensitivity)),
    el("td", {class: "num"}, fmt(row.scale)), el("td", {}, row.source))));
    $("why").textContent = c ? c.why + (c.evaluated > c.rows.length
      ? ` (${c.rows.length} of ${c.evaluated} candidates shown)` : "") : "not listed";
    const cmp = $("comparison").tBodies[0];
    cmp.replaceChildren(...(r.comparison ? r.comparison.rows : []).map((m) => el("tr", {
      class: m.mechanism === r.comparison.best ? "best" : null, "data-mechanism": m.mechanism,
      "data-scale": String(m.scale)},
    el("td", {}, m.mechanism), el("td", {}, m.noise || "-"),
    el("td", {class: "num"}, m.scale === null ? "-" : fmt(m.scale)),
    el("td", {class: "num"}, m.std === null ? "-" : fmt(m.std)),
    el("td", {}, m.applicable ? m.guarantee : "not applicable"), el("td", {}, m.detail))));
    $("command").textContent = r.command;
  }

  // -- editing the model -------------------------------------------------------------------------
  async function openEditor(node, member) {
    const m = member === undefined ? (editing && editing.node === node ? editing.member : 0)
      : member;
    let cpd;
    try {
      cpd = await api("GET", `/api/cpd?node=${encodeURIComponent(node)}&member=${m}`);
    } catch (e) {
      showError("error", e.message);
      return;
    }
    editing = {node, member: m};
    for (const g of $("drawing").querySelectorAll("g.node")) {
      g.classList.toggle("selected", g.dataset.node === node);
    }
    $("editor").hidden = false;
    $("editor-node").textContent = node;
    const many = model.members.length > 1;
    $("member-choice").hidden = !many;
    $("all-members-choice").hidden = !many;
    $("all-members-count").textContent = String(model.members.length);
    $("member").replaceChildren(...model.members.map((name, k) =>
      el("option", {value: k, selected: k === m}, `${k}: ${name}`)));
    showError("editor-error", null);
    const table = $("cpd");
    const head = cpd.parents.map((p, k) => el("tr", {},
      el("th", {}, p.name), ...cpd.columns.map((col) => el("th", {}, p.states[col[k]]))));
    const top = el("tr", {}, el("th", {}, `${cpd.node} \u2193`),
      ...cpd.columns.map(() => el("th", {}, cpd.parents.length ? "" : "P")));
    // Each entry in full: JavaScript's String(x) is the shortest text that reads back as
    // exactly x, and the box is as wide as that text. With several members, the entry's
    // least and largest value over them is shown under it when they differ.
    const rows = cpd.states.map((state, r) => el("tr", {}, el("th", {}, state),
      ...cpd.table[r].map((v, col) => {
        const lo = cpd.min[r][col], hi = cpd.max[r][col];
        const text = String(v);
        return el("td", {}, el("input", {
          type: "text", value: text, size: Math.max(6, text.length + 1),
          title: many ? `member ${m}: ${text}; over the ${model.members.length} members: ` +
            `${String(lo)} to ${String(hi)}` : text,
          "data-row": r, "data-column": col, "data-value": text,
          "aria-label": `P(${cpd.node} = ${state} | column ${col})`, onchange: editCell}),
        many && lo !== hi ? el("small", {class: "range", "data-min": String(lo),
          "data-max": String(hi)}, `${fmt(lo)}\u2013${fmt(hi)}`) : null);
      })));
    table.replaceChildren(el("thead", {}, ...(head.length ? head : [top])), el("tbody", {}, ...rows));
    $("strengths").replaceChildren(...cpd.parents.map((p) => el("label", {},
      `strength of ${p.name} \u2192 ${cpd.node} \u00d7`,
      el("input", {type: "text", value: "1", "data-parent": p.name}),
      el("button", {type: "button", onclick: editStrength}, "Apply"))));
  }

  async function edit(path, body) {
    try {
      showModel(await api("POST", path, body));
      showError("editor-error", null);
      await openEditor(editing.node, editing.member);
      schedule();
    } catch (e) {
      showError("editor-error", e.message);
    }
  }

  // The member an edit applies to: the one shown, or "all" (every member of Theta).
  const editMember = () => ($("all-members").checked && model.members.length > 1 ? "all"
    : editing.member);

  function editCell(ev) {
    const i = ev.target;
    edit("/api/edit/cell", {member: editMember(), node: editing.node,
      column: Number(i.dataset.column), row: Number(i.dataset.row), value: i.value.trim()});
  }

  function editStrength(ev) {
    const input = ev.target.previousElementSibling;
    edit("/api/edit/strength", {member: editMember(), parent: input.dataset.parent,
      child: editing.node, factor: input.value.trim()});
  }

  async function undo() {
    try {
      showModel(await api("POST", "/api/undo", {}));
      if (editing) await openEditor(editing.node, editing.member);
      schedule();
    } catch (e) {
      showError("error", e.message);
    }
  }

  // -- files -------------------------------------------------------------------------------------
  async function save() {
    const status = $("file-status");
    try {
      const r = await api("POST", "/api/save", {path: $("save-path").value});
      status.textContent = `saved ${r.path} (${r.bytes} bytes)`;
      status.className = "";
    } catch (e) {
      status.textContent = e.message;
      status.className = "error";
    }
  }

  async function exportReport() {
    const status = $("file-status");
    const req = request();
    delete req.compare;
    req.path = $("report-path").value;
    let id;
    try {
      id = (await api("POST", "/api/report", req)).job;
    } catch (e) {
      status.textContent = e.message;
      status.className = "error";
      return;
    }
    status.className = "";
    status.textContent = "writing the report\u2026";
    await follow(id, (s) => {
      if (s.state === "done") status.textContent = `wrote ${s.result.html} and ${s.result.json}`;
      else if (s.state === "error") { status.textContent = s.error; status.className = "error"; }
      else status.textContent = "report cancelled";
    }, () => true);
  }

  // -- start ------------------------------------------------------------------------------------
  async function start() {
    if (!token) {
      showError("error", "this page needs the address quiltpriv explore printed (it holds " +
        "the access token)");
      return;
    }
    let m;
    try { m = await api("GET", "/api/model"); } catch (e) {
      showError("error", e.message);
      return;
    }
    showModel(m);
    applyInitial(m);
    $("q-kind").addEventListener("change", () => { showKind(); schedule(); });
    for (const input of document.querySelectorAll("[data-field], #time-limit")) {
      input.addEventListener("change", schedule);
    }
    $("do-compare").addEventListener("change", schedule);
    $("eps").addEventListener("change", () => { syncSlider(); schedule(); });
    $("eps-slider").addEventListener("input", () => {
      $("eps").value = String(Number((10 ** Number($("eps-slider").value)).toPrecision(3)));
      schedule();
    });
    $("cancel").addEventListener("click", () => {
      if (planJob) api("POST", `/api/jobs/${planJob}/cancel`).catch(() => {});
    });
    $("undo").addEventListener("click", undo);
    $("member").addEventListener("change", () => openEditor(editing.node,
      Number($("member").value)));
    $("save").addEventListener("click", save);
    $("export").addEventListener("click", exportReport);
    replan();
  }

  document.addEventListener("DOMContentLoaded", start);
})();
