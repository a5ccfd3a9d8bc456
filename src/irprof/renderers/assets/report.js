// irprof report: builds the page from the inert JSON block with DOM calls and textContent only,
// so names taken from traces and IR are always shown as text, never parsed as markup.
"use strict";
(function () {
  var DATA = JSON.parse(document.getElementById("irprof-data").textContent);
  var app = document.getElementById("app");
  var state = { level: 0, tab: "summary", expandGroups: false };

  function el(tag, props, children) {
    var node = document.createElement(tag);
    props = props || {};
    for (var key in props) {
      if (key === "text") node.textContent = props[key];
      else if (key === "cls") node.className = props[key];
      else if (key === "onclick") node.addEventListener("click", props[key]);
      else if (key === "oninput") node.addEventListener("input", props[key]);
      else if (key === "onchange") node.addEventListener("change", props[key]);
      else node.setAttribute(key, props[key]);
    }
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }
  function fmtNs(ns) {
    if (ns === null || ns === undefined) return "-";
    var a = Math.abs(ns);
    if (a < 1e3) return ns + " ns";
    var units = [[1e9, "s"], [1e6, "ms"], [1e3, "us"]];
    for (var i = 0; i < units.length; i++) {
      if (a >= units[i][0]) {
        var v = ns / units[i][0];
        return v.toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2) + " " + units[i][1];
      }
    }
    return ns + " ns";
  }
  function fmtShare(s) { return s === null || s === undefined ? "-" : (s * 100).toFixed(1) + "%"; }
  function level() { return DATA.levels[state.level]; }

  // ---------- layout ----------
  var manifest = DATA.manifest;
  var header = el("header", {}, [
    el("h1", { text: "irprof · " + manifest.model }),
    el("span", { cls: "sub", text: manifest.framework + " · " + manifest.device + " · " + manifest.steps + " steps · " + manifest.created }),
  ]);
  if (DATA.levels.length > 1) {
    var select = el("select", { id: "level-select", onchange: function (ev) { state.level = Number(ev.target.value); render(); } },
      DATA.levels.map(function (lv, i) { return el("option", { value: String(i), text: "level " + lv.level }); }));
    header.appendChild(el("label", {}, ["IR level ", select]));
  }
  var tabs = [["summary", "Summary"], ["hotspots", "Hotspots"], ["scopes", "Scopes"], ["rollups", "Rollups"], ["roofline", "Roofline"], ["graph", "Op graph"], ["dag", "Event DAG"], ["gaps", "Coverage gaps"]];
  if (DATA.against) tabs.push(["diff", "Diff"]);
  var nav = el("nav", {}, tabs.map(function (t) {
    return el("button", { "data-tab": t[0], text: t[1], onclick: function () { state.tab = t[0]; render(); } });
  }));
  var main = el("main", {});
  app.textContent = "";
  app.appendChild(header); app.appendChild(nav); app.appendChild(main);

  // ---------- pieces ----------
  function card(k, v) { return el("div", { cls: "card" }, [el("div", { cls: "k", text: k }), el("div", { cls: "v", text: v })]); }
  // pairs: [label, text or Node]; a Node value (built with el) is inserted as it is, and a
  // null label makes the value a row of its own across both columns.
  function kv(pairs) {
    var box = el("div", { cls: "kv" });
    pairs.forEach(function (p) {
      if (p[0] === null) { box.appendChild(el("div", { cls: "wide" }, [p[1]])); return; }
      box.appendChild(el("div", { cls: "k", text: p[0] }));
      box.appendChild(p[1] instanceof Node ? el("div", { cls: "mono" }, [p[1]]) : el("div", { cls: "mono", text: p[1] }));
    });
    return box;
  }
  // The op's location, compact: its runtime name and the user's own frames (innermost first);
  // an op of a private function (its own location a bare primitive) first shows the call site.
  // An op's frames are indices into its level's table of frames.
  function opFrames(indices) { var table = level().frames || []; return (indices || []).map(function (i) { return table[i]; }); }
  function compactLocation(op) {
    var frames = opFrames(op.frames), user = opFrames(op.user_frames);
    var box = el("div", { cls: "loc-compact" }, [el("div", { cls: "loc-name", text: op.name || "(no runtime name)" })]);
    if (op.call_site) box.appendChild(el("div", { cls: "loc-frame", text: op.call_site + (op.call_sites > 1 ? " (first of " + op.call_sites + " calls)" : " (call site)") }));
    if (user.length) user.forEach(function (f) { box.appendChild(el("div", { cls: "loc-frame", text: f })); });
    else if (frames.length) box.appendChild(el("div", { cls: "loc-frame muted", text: frames[0] + " (library)" }));
    return box;
  }
  // The whole call-site chain, library frames included (user frames in bold), behind a toggle.
  function fullLocation(op) {
    var frames = opFrames(op.frames), user = opFrames(op.user_frames);
    var full = frames.length
      ? el("ol", { cls: "frames" }, frames.map(function (f) { return el("li", { cls: user.indexOf(f) >= 0 ? "user" : "", text: f }); }))
      : el("div", { cls: "frames", text: op.location });
    return el("details", { cls: "full-loc" }, [
      el("summary", { text: "full location (" + frames.length + " frame" + (frames.length === 1 ? "" : "s") + ")" }), full]);
  }

  // A sortable, filterable table. columns: {key, title, num, fmt(row), sortKey(row)}.
  function dataTable(columns, rows, options) {
    options = options || {};
    var sortCol = options.sortKey || null, dir = "desc";
    var filterText = "";
    var tbody = el("tbody");
    var heads = columns.map(function (c) {
      return el("th", { cls: c.num ? "num" : "", text: c.title, onclick: function () {
        dir = sortCol === c.key && dir === "desc" ? "asc" : "desc"; sortCol = c.key; fill();
      } });
    });
    function value(c, row) { return c.sortKey ? c.sortKey(row) : row[c.key]; }
    function fill() {
      heads.forEach(function (h, i) { h.removeAttribute("data-dir"); if (columns[i].key === sortCol) h.setAttribute("data-dir", dir); });
      var shown = rows.filter(function (row) {
        if (!filterText) return true;
        return columns.some(function (c) { return String(c.fmt ? c.fmt(row) : row[c.key]).toLowerCase().indexOf(filterText) >= 0; });
      });
      if (sortCol) {
        var col = columns.filter(function (c) { return c.key === sortCol; })[0];
        shown.sort(function (a, b) {
          var x = value(col, a), y = value(col, b);
          var r = x < y ? -1 : x > y ? 1 : 0;
          return dir === "asc" ? r : -r;
        });
      }
      tbody.textContent = "";
      shown.forEach(function (row) {
        var tr = el("tr", { cls: options.onRow ? "clickable" : "" }, columns.map(function (c) {
          var cell = el("td", { cls: (c.num ? "num " : "") + (c.cls || "") });
          var content = c.render ? c.render(row) : (c.fmt ? c.fmt(row) : row[c.key]);
          if (content instanceof Node) cell.appendChild(content); else cell.textContent = String(content);
          return cell;
        }));
        if (options.onRow) tr.addEventListener("click", function () {
          var prev = tbody.querySelector("tr.selected"); if (prev) prev.classList.remove("selected");
          tr.classList.add("selected"); options.onRow(row);
        });
        tbody.appendChild(tr);
      });
      if (options.counter) options.counter.textContent = shown.length + " of " + rows.length + " rows";
    }
    var table = el("table", {}, [el("thead", {}, [el("tr", {}, heads)]), tbody]);
    table.setFilter = function (text) { filterText = text.trim().toLowerCase(); fill(); };
    fill();
    return table;
  }

  function opDetails(box, opIndex, extra) {
    box.textContent = "";
    var op = level().ops[String(opIndex)];
    if (!op) { box.appendChild(el("p", { cls: "muted", text: "no IR text kept for this op" })); return; }
    box.appendChild(el("h3", { text: (op.name || op.op_name) }));
    var pairs = [["op", op.op_name]];
    if (op.runtime_name && op.runtime_name !== op.name) pairs.push(["runtime name (IR)", op.runtime_name]);
    pairs = pairs.concat([["function", "@" + op.function], ["scope", op.scope || "-"], ["location", compactLocation(op)], [null, fullLocation(op)]]);
    if (op.profile) {
      var p = op.profile;
      pairs = pairs.concat([["total", fmtNs(p.total_ns)], ["share", fmtShare(p.fraction)], ["count", String(p.count)], ["mean / min / max", fmtNs(p.mean_ns) + " / " + fmtNs(p.min_ns) + " / " + fmtNs(p.max_ns)], ["kernels", p.kernels.join("\n") || "-"], ["fused with", p.fused_with.join("\n") || "-"], ["source of data", p.source || "-"]]);
    } else {
      pairs.push(["profile", "none"]);
    }
    (extra || []).forEach(function (e) { pairs.push(e); });
    box.appendChild(kv(pairs));
    box.appendChild(el("pre", { cls: "ir-text", text: op.ir || "(IR text not embedded)" }));
  }

  function hotspotColumns(by) {
    var lv = level();
    var maxShare = Math.max.apply(null, [1e-12].concat(lv["by_" + by].rows.map(function (r) { return r.share; })));
    var cols = [
      { key: "key", title: by === "op" ? "op (runtime name)" : by === "type" ? "op kind" : "name scope", cls: "mono" },
    ];
    if (by !== "type") cols.push({ key: "op_name", title: "kind", cls: "mono" });
    var tbl = lv["by_" + by];
    var ranked = tbl.stat !== "sum";
    var steps = Math.max.apply(null, [0].concat(tbl.rows.map(function (r) { return r.steps || 0; })));
    // The ranked time: the table's statistic (median step x steps by default), else the sum.
    var rankedNs = function (r) { return ranked ? r.stat_ns : r.total_ns; };
    cols = cols.concat([
      // "~": part of the time is an estimated share of a group's measured time.
      { key: "stat_ns", title: ranked ? "time (" + tbl.stat + (steps ? " x" + steps : "") + ")" : "time", num: true, fmt: function (r) { return (r.estimated_ns ? "~" : "") + fmtNs(rankedNs(r)); }, sortKey: rankedNs,
        render: function (r) { return el("span", { title: (r.estimated_ns ? "estimated share of a measured group: " + fmtNs(r.estimated_ns) + "; " : "") + tbl.stat_label }, [el("span", { cls: "bar", style: "width:" + Math.round(60 * r.share / maxShare) + "px" }), (r.estimated_ns ? "~" : "") + fmtNs(rankedNs(r))]); } },
    ]);
    if (ranked) cols.push({ key: "total_ns", title: "sum", num: true, fmt: function (r) { return (r.estimated_ns ? "~" : "") + fmtNs(r.total_ns); }, sortKey: function (r) { return r.total_ns; } });
    cols = cols.concat([
      { key: "share", title: "share", num: true, fmt: function (r) { return fmtShare(r.share); } },
      { key: "count", title: "count", num: true },
      { key: "mean_ns", title: "mean", num: true, fmt: function (r) { return fmtNs(r.mean_ns); }, sortKey: function (r) { return r.mean_ns; } },
    ]);
    if (steps) {
      var rules = DATA.step_rules || {};
      cols.push({ key: "step_max_ns", title: "step min / med / max", num: true, sortKey: function (r) { return r.step_median_ns ? r.step_max_ns / r.step_median_ns : 0; },
        fmt: function (r) { return r.steps ? (r.unstable ? "! " : "") + fmtNs(r.step_min_ns) + " / " + fmtNs(r.step_median_ns) + " / " + fmtNs(r.step_max_ns) : "-"; },
        render: function (r) {
          var text = r.steps ? fmtNs(r.step_min_ns) + " / " + fmtNs(r.step_median_ns) + " / " + fmtNs(r.step_max_ns) : "-";
          return r.unstable ? el("span", { cls: "unstable", title: "unstable: slowest step > " + rules.unstable_ratio + "x the median step" }, ["! " + text]) : el("span", { text: text });
        } });
    }
    if (by !== "op") cols.push({ key: "ops", title: "ops", num: true });
    if (by === "op") {
      cols.push({ key: "kernels", title: "kernels", cls: "mono", fmt: function (r) { return r.kernels.join(", "); }, sortKey: function (r) { return r.kernels.join(","); } });
      cols.push({ key: "fused_with", title: "fused with", cls: "mono", fmt: function (r) { return r.fused_with.join(", "); }, sortKey: function (r) { return r.fused_with.join(","); } });
    }
    cols.push({ key: "location", title: "location", cls: "loc" });
    return cols;
  }

  // ---------- tabs ----------
  // The capture's median step times (manifest options.overhead): what the profiler cost the
  // steps every time above was measured in. Null unless all three are positive integers.
  function captureOverhead(options) {
    var o = options && options.overhead;
    var keys = ["no_profiler_ns", "profiler_ns", "irprof_ns"];
    if (!o || typeof o !== "object" || !keys.every(function (k) { return Number.isInteger(o[k]) && o[k] > 0; })) return null;
    return "timed steps " + fmtNs(o.irprof_ns) + " (" + (o.irprof_ns / o.profiler_ns).toFixed(2) + "x the profiler alone at " +
      fmtNs(o.profiler_ns) + ", " + (o.irprof_ns / o.no_profiler_ns).toFixed(2) + "x no profiler at " + fmtNs(o.no_profiler_ns) + ")";
  }

  function summaryTab() {
    var lv = level();
    var cov = lv.coverage;
    var versions = Object.keys(manifest.versions).map(function (k) { return k + " " + manifest.versions[k]; }).join(", ");
    var cards = el("div", { cls: "cards" }, [
      card("model", manifest.model), card("framework", manifest.framework), card("versions", versions || "-"),
      card("steps", String(manifest.steps)), card("device", manifest.device),
      card("profiled op time", fmtNs(lv.profiled_ns)),
      card("time coverage", cov ? fmtShare(cov.time_coverage) : "-"),
      card("ops with a profile, of all ops", lv.ops_annotated + " of " + lv.ops_total + " (constants, returns and declarations included)"),
      card("non-trivial coverage", cov ? fmtShare(cov.nontrivial_coverage) + " (" + cov.ops_nontrivial_annotated + "/" + cov.ops_nontrivial + ")" : "-"),
    ]);
    var overhead = captureOverhead(manifest.options);
    if (overhead) cards.appendChild(card("capture overhead", overhead));
    var rows = DATA.levels.map(function (l) {
      var c = l.coverage || {};
      return { level: l.level, profiled: l.profiled_ns, attributed: c.attributed_ns, time: c.time_coverage, ops: l.ops_annotated + "/" + l.ops_total, nontrivial: c.nontrivial_coverage };
    });
    var levels = dataTable([
      { key: "level", title: "IR level" },
      { key: "profiled", title: "profiled", num: true, fmt: function (r) { return fmtNs(r.profiled); } },
      { key: "attributed", title: "attributed", num: true, fmt: function (r) { return fmtNs(r.attributed); } },
      { key: "time", title: "time coverage", num: true, fmt: function (r) { return fmtShare(r.time); } },
      { key: "ops", title: "ops with a profile / all ops" },
      { key: "nontrivial", title: "non-trivial coverage", num: true, fmt: function (r) { return fmtShare(r.nontrivial); } },
    ], rows);
    // What a reader wants first: the scopes and the measured groups that hold the time,
    // not the estimated shares of single ops inside a fused kernel.
    var parts = [cards];
    if (lv.scopes && lv.scopes.headline.length) {
      parts.push(el("h2", { text: "Where the time goes" }));
      parts.push(shareList("summary-scopes", lv.scopes.headline.map(function (n) {
        return { name: n.path || n.name, note: n.kind === "scope" ? n.ops + " op" + (n.ops === 1 ? "" : "s") : n.kind, total_ns: n.total_ns, share: n.share, estimated: n.estimated_ns > 0 };
      })));
    }
    var phases = trainingPhases(cov);
    if (phases) parts.push(el("h2", { text: "Training step by phase" }), phases);
    parts.push(el("h2", { text: "Hottest groups and ops" }));
    parts.push(el("p", { cls: "muted", id: "summary-stat", text: "ranked by " + lv.by_op.stat_label + (lv.by_op.stat_note ? " (" + lv.by_op.stat_note + ")" : "") }));
    parts.push(shareList("summary-hottest", lv.by_op.rows.slice(0, 5).map(function (r) {
      return { name: r.key, note: r.group && r.ops > 1 ? "one measured group of " + r.ops + " ops" : r.op_name, total_ns: lv.by_op.stat === "sum" ? r.total_ns : r.stat_ns, share: r.share, estimated: r.estimated_ns > 0 };
    })));
    parts = parts.concat(stepNotes(lv.by_op));
    parts.push(el("h2", { text: "Levels" }), levels);
    return parts;
  }

  // A training step's time by phase (forward, backward, optimizer), as `annotate` prints it.
  function trainingPhases(cov) {
    var training = cov && cov.extra && cov.extra.training;
    if (!training || !training.phases_profiled_ns) return null;
    var buckets = training.buckets || [];
    var rows = ["forward", "backward", "optimizer"].filter(function (p) {
      return (training.phases_profiled_ns[p] || 0) > 0;
    }).map(function (p) {
      return { phase: p, profiled: training.phases_profiled_ns[p], attributed: (training.phases_ns || {})[p], bucket: buckets.indexOf(p) >= 0 };
    });
    if (!rows.length) return null;
    return dataTable([
      { key: "phase", title: "phase" },
      { key: "profiled", title: "profiled", num: true, fmt: function (r) { return fmtNs(r.profiled); } },
      { key: "attributed", title: "attributed to ops", num: true, fmt: function (r) { return r.bucket ? "own bucket, no IR op" : fmtNs(r.attributed || 0); } },
    ], rows);
  }

  // The noise warnings and outlier op-steps of a hotspot table (kept out of a median ranking).
  function stepNotes(tbl) {
    var parts = [];
    var warnings = (tbl.noise && tbl.noise.warnings) || [];
    if (warnings.length) parts.push(el("ul", { cls: "warnings", id: "noise-warnings" }, warnings.map(function (w) { return el("li", { text: "warning: " + w }); })));
    if (tbl.outliers_total) {
      var rules = DATA.step_rules || {};
      parts.push(el("h2", { text: "Outliers (" + tbl.outliers_total + ")" }));
      parts.push(el("p", { cls: "muted", text: "op-steps above their op's median step by more than " + rules.outlier_mads + " MADs and " + fmtNs(rules.outlier_floor_ns) + (tbl.stat === "median" || tbl.stat === "min" ? "; not used for ranking" : "") }));
      parts.push(dataTable([
        { key: "key", title: "op", cls: "mono" },
        { key: "step", title: "step", num: true },
        { key: "value_ns", title: "time in step", num: true, fmt: function (r) { return fmtNs(r.value_ns); } },
        { key: "excess_ns", title: "above median", num: true, fmt: function (r) { return "+" + fmtNs(r.excess_ns); } },
        { key: "ratio", title: "x median", num: true, fmt: function (r) { return r.ratio === null ? "-" : r.ratio.toFixed(1) + "x"; }, sortKey: function (r) { return r.ratio === null ? Infinity : r.ratio; } },
      ], tbl.outliers, { sortKey: "excess_ns" }));
    }
    return parts;
  }

  // Ranked rows with a share bar: [{name, note, total_ns, share, estimated}].
  function shareList(id, items) {
    var most = Math.max.apply(null, [1e-12].concat(items.map(function (i) { return i.share; })));
    return el("ol", { cls: "share-list", id: id }, items.map(function (i) {
      return el("li", {}, [
        el("span", { cls: "bar", style: "width:" + Math.round(80 * i.share / most) + "px" }),
        el("span", { cls: "mono name", text: i.name }),
        el("span", { cls: "num", text: (i.estimated ? "~" : "") + fmtNs(i.total_ns) + " (" + fmtShare(i.share) + ")" }),
        el("span", { cls: "muted", text: i.note || "" }),
      ]);
    }));
  }

  function hotspotsTab() {
    var lv = level();
    // Groups (a fused kernel, a decomposed call) are one measured row unless expanded.
    var rowsOf = state.expandGroups ? lv.by_op_expanded : lv.by_op;
    var details = el("div", { cls: "details", id: "op-details" }, [el("p", { cls: "muted", text: "Click a row to see the op's IR with its annotation." })]);
    var counter = el("span", { cls: "muted" });
    var table = dataTable(hotspotColumns("op"), rowsOf.rows, { sortKey: "stat_ns", counter: counter, onRow: function (r) {
      // A group row opens its hottest member, headed by what the row stands for.
      var group = r.group && r.ops > 1 ? [["group", r.key + ": " + r.ops + " ops share " + fmtNs(r.total_ns) + " measured"]] : undefined;
      opDetails(details, r.op_index, group);
    } });
    table.id = "hotspot-table";
    var filter = el("input", { type: "search", id: "hotspot-filter", placeholder: "filter ops, kinds, kernels, locations", oninput: function (ev) { table.setFilter(ev.target.value); } });
    var expand = el("input", { type: "checkbox", id: "expand-groups", onchange: function (ev) { state.expandGroups = ev.target.checked; render(); } });
    expand.checked = !!state.expandGroups;
    var toggle = el("label", { cls: "muted", title: "one row per op; the time of an op sharing a measured group is an estimated share (~)" }, [expand, " expand groups"]);
    var note = rowsOf.rows_total > rowsOf.rows.length ? " (top " + rowsOf.rows.length + " of " + rowsOf.rows_total + " embedded)" : "";
    var ranking = "ranked by " + rowsOf.stat_label + (rowsOf.stat_note ? " (" + rowsOf.stat_note + ")" : "");
    return [el("div", { cls: "toolbar" }, [filter, toggle, counter, el("span", { cls: "muted", id: "hotspot-stat", text: ranking + " · " + fmtNs(rowsOf.total_ns) + " attributed (sum)" + note })]), table].concat(stepNotes(rowsOf), [details]);
  }

  function rollupsTab() {
    var lv = level();
    var byType = dataTable(hotspotColumns("type"), lv.by_type.rows, { sortKey: "stat_ns" });
    var byScope = dataTable(hotspotColumns("scope"), lv.by_scope.rows, { sortKey: "stat_ns" });
    return [el("div", { cls: "split" }, [
      el("div", {}, [el("h2", { text: "Time per op kind" }), byType]),
      el("div", {}, [el("h2", { text: "Time per name scope" }), byScope]),
    ])];
  }

  function graphTab() {
    var lv = level();
    if (!lv.graph) return [el("p", { cls: "muted", text: lv.graph_note || "no function to draw at this level" })];
    var view = el("div", { cls: "graph-view", id: "graph-view" });
    var details = el("div", { cls: "details", id: "node-details" }, [el("p", { cls: "muted", text: "Click a node. Drag to pan, wheel to zoom." })]);
    var status = el("span", { cls: "muted", id: "graph-status" });
    var graph = null;
    var search = el("input", { type: "search", id: "graph-search", placeholder: "search ops, scopes, locations", oninput: function (ev) {
      if (!graph) return;
      var hits = graph.search(ev.target.value);
      status.textContent = ev.target.value ? hits.length + " match" + (hits.length === 1 ? "" : "es") : "";
    } });
    var reset = el("button", { text: "reset view", onclick: function () { if (graph) graph.reset(); } });
    var info = el("span", { cls: "muted", text: "@" + lv.graph.function + " · " + lv.graph.op_count + " ops · " + Object.keys(lv.graph.nodes).length + " nodes" });
    setTimeout(function () {
      graph = IrprofGraph.mount(view, lv.graph.svg, lv.graph.nodes, function (id) {
        var node = lv.graph.nodes[id];
        details.textContent = "";
        if (node.op_index !== null && node.op_index !== undefined && lv.ops[String(node.op_index)]) {
          opDetails(details, node.op_index, [["node time (with nested ops)", fmtNs(node.total_ns)]]);
          return;
        }
        details.appendChild(el("h3", { text: node.title || node.label }));
        details.appendChild(kv([["kind", node.kind], ["time", fmtNs(node.total_ns)], ["share", fmtShare(node.share)], ["ops", String(node.ops)], ["detail", node.detail || "-"]]));
      });
    }, 0);
    return [el("div", { cls: "toolbar" }, [search, reset, status, info]), el("div", { cls: "graph-wrap" }, [view, details])];
  }

  function dagTab() {
    var ed = DATA.event_dag;
    var parts = [];
    if (ed) {
      var view = el("div", { cls: "graph-view", id: "dag-view" });
      var details = el("div", { cls: "details", id: "event-details" }, [el("p", { cls: "muted", text: "Click an event. Drag to pan, wheel to zoom." })]);
      var status = el("span", { cls: "muted" });
      var dag = null;
      var search = el("input", { type: "search", id: "dag-search", placeholder: "search events", oninput: function (ev) {
        if (!dag) return;
        var hits = dag.search(ev.target.value);
        status.textContent = ev.target.value ? hits.length + " matches" : "";
      } });
      parts.push(el("div", { cls: "toolbar" }, [search, el("button", { text: "reset view", onclick: function () { if (dag) dag.reset(); } }), status,
        el("span", { cls: "muted", text: ed.note + " · " + ed.events + " events, " + ed.edges + " edges; the " + Object.keys(ed.nodes).length + " longest drawn" })]));
      parts.push(el("div", { cls: "graph-wrap" }, [view, details]));
      setTimeout(function () {
        if (!ed.svg) { view.textContent = "no events"; return; }
        dag = IrprofGraph.mount(view, ed.svg, ed.nodes, function (id) {
          var n = ed.nodes[id];
          details.textContent = "";
          details.appendChild(el("h3", { text: n.label }));
          details.appendChild(kv([["track", n.location], ["start (from the trace's first event)", fmtNs(n.ts_ns)], ["duration", fmtNs(n.total_ns)], ["depth", n.detail]]));
        });
      }, 0);
      var rows = Object.keys(ed.nodes).map(function (k) { var n = ed.nodes[k]; return { id: k, name: n.label, track: n.location, ts: n.ts_ns, dur: n.total_ns }; });
      parts.push(el("h2", { text: "Longest events" }));
      parts.push(dataTable([
        { key: "name", title: "event", cls: "mono" }, { key: "track", title: "track", cls: "mono" },
        { key: "ts", title: "start (from the trace's first event)", num: true, fmt: function (r) { return fmtNs(r.ts); }, sortKey: function (r) { return r.ts; } },
        { key: "dur", title: "duration", num: true, fmt: function (r) { return fmtNs(r.dur); }, sortKey: function (r) { return r.dur; } },
      ], rows, { sortKey: "dur" }));
      return parts;
    }
    var doc = DATA.dag;
    if (!doc) return [el("p", { cls: "muted", text: "No event DAG: " + DATA.dag_note + "." })];
    var nodes = Array.isArray(doc.nodes) ? doc.nodes : [];
    var table = dataTable([
      { key: "name", title: "event", cls: "mono" }, { key: "track", title: "track", cls: "mono" },
      { key: "ts", title: "start", num: true, fmt: function (r) { return fmtNs(r.ts); } },
      { key: "duration", title: "duration", num: true, fmt: function (r) { return fmtNs(r.duration); } },
    ], nodes.slice(0, 2000), { sortKey: "duration" });
    return [el("p", { text: "dag.json: " + nodes.length + " events (" + DATA.dag_note + ")" }), table];
  }

  function gapsTab() {
    var lv = level();
    var cov = lv.coverage;
    var parts = [];
    if (cov && cov.warnings && cov.warnings.length) parts.push(el("ul", {}, cov.warnings.map(function (w) { return el("li", { cls: "warn", text: w }); })));
    parts.push(el("h2", { text: "Unattributed events" }));
    var events = cov ? cov.unmatched_events : [];
    parts.push(events.length ? dataTable([
      { key: "name", title: "event", cls: "mono" },
      { key: "total_ns", title: "time", num: true, fmt: function (r) { return fmtNs(r.total_ns); }, sortKey: function (r) { return r.total_ns; } },
      { key: "count", title: "count", num: true }, { key: "reason", title: "reason" },
    ], events, { sortKey: "total_ns" }) : el("p", { cls: "muted", text: cov ? "every profiled op event was attributed" : "no coverage.json for this level" }));
    parts.push(el("h2", { text: "Unannotated non-trivial ops (" + lv.unannotated_total + ")" }));
    var details = el("div", { cls: "details" }, [el("p", { cls: "muted", text: "Click a row to see the op's IR." })]);
    parts.push(lv.unannotated.length ? dataTable([
      { key: "op_name", title: "op", cls: "mono" }, { key: "name", title: "runtime name", cls: "mono" },
      { key: "location", title: "location", cls: "loc" }, { key: "reason", title: "reason" },
    ], lv.unannotated, { onRow: function (r) { opDetails(details, r.op_index); } }) : el("p", { cls: "muted", text: "every non-trivial op has a profile" }));
    parts.push(details);
    return parts;
  }

  // ---------- scopes (icicle), roofline, diff ----------
  function fmtNum(x) { return x === null || x === undefined ? "-" : Number(x).toPrecision(3); }
  function fmtBytes(b) {
    if (b === null || b === undefined) return "-";
    var units = [[1e9, "GB"], [1e6, "MB"], [1e3, "kB"]];
    for (var i = 0; i < units.length; i++) if (Math.abs(b) >= units[i][0]) return (b / units[i][0]).toPrecision(3) + " " + units[i][1];
    return b + " B";
  }

  function scopesTab() {
    var lv = level();
    var sc = lv.scopes;
    if (!sc || !sc.svg || !Object.keys(sc.cells).length) return [el("p", { cls: "muted", text: "no attributed time at this level" })];
    var view = el("div", { cls: "graph-view icicle-view", id: "icicle-view" });
    var details = el("div", { cls: "details", id: "scope-details" }, [el("p", { cls: "muted", text: "Click a cell to zoom into it and see what it holds." })]);
    var crumbs = el("span", { cls: "mono", id: "icicle-path" });
    var icicle = null, svg = null;
    // Zoom: every cell is re-placed from its root fractions, so the picked one fills the width.
    function zoom(id) {
      var c = sc.cells[id], width = svg.viewBox.baseVal.width;
      var z0 = c.x0, span = Math.max(c.x1 - c.x0, 1e-12);
      Array.prototype.forEach.call(svg.querySelectorAll("g.cell"), function (g) {
        var x0 = (Number(g.getAttribute("data-x0")) - z0) / span, x1 = (Number(g.getAttribute("data-x1")) - z0) / span;
        var visible = x1 > 1e-9 && x0 < 1 - 1e-9;
        g.style.display = visible ? "" : "none";
        if (!visible) return;
        x0 = Math.max(0, x0); x1 = Math.min(1, x1);
        var rect = g.querySelector("rect"), text = g.querySelector("text");
        rect.setAttribute("x", (x0 * width).toFixed(2)); rect.setAttribute("width", Math.max((x1 - x0) * width, 0.5).toFixed(2));
        text.setAttribute("x", (x0 * width + 4).toFixed(2));
        var room = Math.floor(((x1 - x0) * width - 6) / 7), label = g.getAttribute("data-label") || "";
        text.textContent = room < 3 ? "" : label.length <= room ? label : label.slice(0, room - 1) + "\u2026";
      });
      crumbs.textContent = c.path || c.label;
    }
    function show(id) {
      var c = sc.cells[id];
      details.textContent = "";
      details.appendChild(el("h3", { text: c.path || c.label }));
      var pairs = [["kind", c.kind], ["time", (c.estimated_ns ? "~" : "") + fmtNs(c.total_ns)], ["share", fmtShare(c.share)], ["ops", String(c.ops)]];
      if (c.estimated_ns) pairs.push(["estimated part", fmtNs(c.estimated_ns) + " (shares of fused groups)"]);
      if (c.op_name) pairs.push(["op kind", c.op_name]);
      if (c.location) pairs.push(["location", c.location]);
      details.appendChild(kv(pairs));
      var kids = c.children.map(function (k) { return sc.cells[k]; });
      if (kids.length) {
        details.appendChild(dataTable([
          { key: "label", title: "holds", cls: "mono" },
          { key: "total_ns", title: "time", num: true, fmt: function (r) { return fmtNs(r.total_ns); } },
          { key: "share", title: "share", num: true, fmt: function (r) { return fmtShare(r.share); } },
          { key: "ops", title: "ops", num: true },
        ], kids, { sortKey: "total_ns", onRow: function (r) { if (icicle) icicle.pick(r.id); } }));
      } else if (c.op_index >= 0 && lv.ops[String(c.op_index)]) {
        var box = el("div", {});
        details.appendChild(box);
        opDetails(box, c.op_index, c.kind === "group" ? [["group", c.label + ": " + c.ops + " ops share " + fmtNs(c.total_ns) + " measured"]] : undefined);
      }
    }
    var reset = el("button", { text: "whole level", onclick: function () { if (icicle) icicle.pick("c0"); } });
    var search = el("input", { type: "search", id: "icicle-search", placeholder: "search scopes and ops", oninput: function (ev) { if (icicle) icicle.search(ev.target.value); } });
    setTimeout(function () {
      icicle = IrprofGraph.mount(view, sc.svg, sc.cells, function (id) { zoom(id); show(id); });
      svg = view.querySelector("svg");
      if (svg) { svg.setAttribute("preserveAspectRatio", "xMinYMin meet"); crumbs.textContent = sc.cells.c0.label; }
    }, 0);
    var note = fmtNs(sc.total_ns) + " in " + Object.keys(sc.cells).length + " cells; width = time";
    return [el("div", { cls: "toolbar" }, [search, reset, crumbs, el("span", { cls: "muted", text: note })]), el("div", { cls: "icicle-wrap" }, [view, details])];
  }

  function rooflineTab() {
    var lv = level();
    var rf = lv.roofline;
    if (!rf) return [el("p", { cls: "muted", text: "no roofline for this level" })];
    var peaks = rf.peaks;
    var parts = [];
    var facts = peaks
      ? "peaks " + peaks.gflops.toFixed(1) + " GFLOP/s, " + peaks.gbps.toFixed(1) + " GB/s (ridge " + rf.ridge.toFixed(2) + " FLOP/B; " + peaks.source + (peaks.measured_at ? ", measured " + peaks.measured_at : "") + ")"
      : "no machine peaks given: achieved rates without roofs or bounds";
    var costed = rf.total_ns ? fmtShare(rf.costed_ns / rf.total_ns) : "-";
    parts.push(el("div", { cls: "toolbar" }, [el("span", { cls: "mono", id: "roofline-peaks", text: facts }), el("span", { cls: "muted", text: "FLOPs and bytes known from the IR for " + costed + " of the time" })]));
    if (peaks && peaks.method) parts.push(el("p", { cls: "muted", text: peaks.method }));
    var bounds = Object.keys(rf.bound_ns).filter(function (b) { return rf.bound_ns[b] > 0; }).map(function (b) { return b + " " + fmtNs(rf.bound_ns[b]) + " (" + fmtShare(rf.bound_ns[b] / (rf.total_ns || 1)) + ")"; });
    parts.push(el("p", { id: "roofline-bounds", text: "time by bound: " + (bounds.join(" · ") || "-") }));
    var view = el("div", { cls: "graph-view roofline-view", id: "roofline-view" });
    var details = el("div", { cls: "details", id: "roofline-details" }, [el("p", { cls: "muted", text: "Hover a point for its op; click one (or a row) for its IR and figures." })]);
    function pick(row) {
      var p = rf.points[row];
      if (!p) return;
      opDetails(details, p.op_index, [
        ["row", p.key + (p.ops > 1 ? " (" + p.ops + " ops, one measured group)" : "")],
        ["work per run", fmtNum(p.flops / Math.max(1, p.executions)) + " FLOP, " + fmtBytes(p.bytes / Math.max(1, p.executions)) + " (" + p.category + ")"],
        ["runs", String(p.executions)], ["intensity", fmtNum(p.intensity) + " FLOP/B"],
        ["achieved", fmtNum(p.achieved_gflops) + " GFLOP/s, " + fmtNum(p.achieved_gbps) + " GB/s"],
        ["of the roof", p.roof_fraction === null ? "-" : (p.roof_fraction * 100).toFixed(1) + "% (" + p.bound + "-bound)"],
      ]);
    }
    setTimeout(function () {
      if (!rf.svg) return;
      IrprofGraph.mount(view, rf.svg, rf.nodes, function (id) { pick(rf.nodes[id].row); });
    }, 0);
    parts.push(el("div", { cls: "graph-wrap" }, [view, details]));
    var table = dataTable([
      { key: "key", title: "op or group", cls: "mono" },
      { key: "category", title: "work" },
      { key: "total_ns", title: "time", num: true, fmt: function (r) { return (r.estimated ? "~" : "") + fmtNs(r.total_ns); }, sortKey: function (r) { return r.total_ns; } },
      { key: "intensity", title: "FLOP/B", num: true, fmt: function (r) { return fmtNum(r.intensity); }, sortKey: function (r) { return r.intensity === null ? -1 : r.intensity; } },
      { key: "achieved_gflops", title: "GFLOP/s", num: true, fmt: function (r) { return fmtNum(r.achieved_gflops); }, sortKey: function (r) { return r.achieved_gflops === null ? -1 : r.achieved_gflops; } },
      { key: "achieved_gbps", title: "GB/s", num: true, fmt: function (r) { return fmtNum(r.achieved_gbps); }, sortKey: function (r) { return r.achieved_gbps === null ? -1 : r.achieved_gbps; } },
      { key: "roof_fraction", title: "roof", num: true, fmt: function (r) { return r.roof_fraction === null ? "-" : (r.roof_fraction * 100).toFixed(1) + "%"; }, sortKey: function (r) { return r.roof_fraction === null ? -1 : r.roof_fraction; } },
      { key: "bound", title: "bound" },
      { key: "location", title: "location", cls: "loc" },
    ], rf.points.map(function (p, i) { p.row = i; return p; }), { sortKey: "total_ns", onRow: function (r) { pick(r.row); } });
    table.id = "roofline-table";
    parts.push(el("h2", { text: "Rows (" + rf.points.length + " of " + rf.rows_total + ")" }), table);
    return parts;
  }

  function diffTab() {
    var d = level().diff;
    if (!d) return [el("p", { cls: "muted", text: "level " + level().level + " is not annotated in " + DATA.against + ": no diff here" })];
    function interval(r) { return r.interval_ns ? "[" + fmtNs(Math.round(r.interval_ns[0])) + ", " + fmtNs(Math.round(r.interval_ns[1])) + "]" : "-"; }
    function pct(r) { return r.delta_pct === null ? "-" : (r.delta_pct > 0 ? "+" : "") + r.delta_pct.toFixed(1) + "%"; }
    function columns(keyTitle) {
      return [
        { key: "key", title: keyTitle, cls: "mono" },
        { key: "a_ns", title: "A per step", num: true, fmt: function (r) { return fmtNs(Math.round(r.a_ns)); } },
        { key: "b_ns", title: "B per step", num: true, fmt: function (r) { return fmtNs(Math.round(r.b_ns)); } },
        { key: "delta_ns", title: "delta", num: true, fmt: function (r) { return (r.delta_ns > 0 ? "+" : "") + fmtNs(Math.round(r.delta_ns)); }, sortKey: function (r) { return Math.abs(r.delta_ns); } },
        { key: "delta_pct", title: "%", num: true, fmt: pct, sortKey: function (r) { return r.delta_pct === null ? 0 : r.delta_pct; } },
        { key: "interval_ns", title: "interval", num: true, fmt: interval, sortKey: function (r) { return r.interval_ns ? r.interval_ns[0] : 0; } },
        { key: "significant", title: "significant", fmt: function (r) { return r.significant ? "yes" : ""; } },
      ];
    }
    var t = d.total;
    var cards = el("div", { cls: "cards" }, [
      card("A (before)", DATA.against), card("B (this run)", DATA.bundle),
      card("all ops per step", fmtNs(Math.round(t.a_ns)) + " \u2192 " + fmtNs(Math.round(t.b_ns))),
      card("delta", (t.delta_ns > 0 ? "+" : "") + fmtNs(Math.round(t.delta_ns)) + " (" + pct(t) + ")"),
      card("interval (" + Math.round(d.confidence * 100) + "%)", interval(t) + (t.significant ? " significant" : "")),
      card("steps", d.steps.a + " vs " + d.steps.b + " (" + d.samples.a + " / " + d.samples.b + ")"),
    ]);
    var ops = dataTable(columns("op").concat([{ key: "match", title: "matched by" }, { key: "location", title: "location", cls: "loc" }]), d.ops, { sortKey: "delta_ns" });
    ops.id = "diff-ops";
    var parts = [cards, el("h2", { text: "Ops" }), ops];
    parts.push(el("div", { cls: "split" }, [
      el("div", {}, [el("h2", { text: "Scopes" }), dataTable(columns("name scope"), d.scopes, { sortKey: "delta_ns" })]),
      el("div", {}, [el("h2", { text: "Op kinds" }), dataTable(columns("op kind"), d.kinds, { sortKey: "delta_ns" })]),
    ]));
    parts.push(el("h2", { text: "Fusion changes (" + d.fusion.length + ")" }));
    parts.push(d.fusion.length ? dataTable([
      { key: "change", title: "change" },
      { key: "members", title: "ops", cls: "mono", fmt: function (r) { return r.members.join(", "); } },
      { key: "kernels_a", title: "kernels in A", cls: "mono", fmt: function (r) { return r.kernels_a.join(", "); } },
      { key: "kernels_b", title: "kernels in B", cls: "mono", fmt: function (r) { return r.kernels_b.join(", "); } },
    ], d.fusion) : el("p", { cls: "muted", text: "the same ops ran together in both runs" }));
    if (d.notes.length) parts.push(el("ul", {}, d.notes.map(function (n) { return el("li", { cls: "warn", text: n }); })));
    return parts;
  }

  var builders = { summary: summaryTab, hotspots: hotspotsTab, scopes: scopesTab, rollups: rollupsTab, roofline: rooflineTab, graph: graphTab, dag: dagTab, gaps: gapsTab, diff: diffTab };
  function render() {
    Array.prototype.forEach.call(nav.children, function (b) { b.classList.toggle("active", b.getAttribute("data-tab") === state.tab); });
    main.textContent = "";
    var section = el("section", { id: "tab-" + state.tab });
    builders[state.tab]().forEach(function (part) { section.appendChild(part); });
    main.appendChild(section);
  }
  render();
})();
