// Standalone op graph page: the graph viewer plus a search box and a details panel.
"use strict";
(function () {
  var DATA = JSON.parse(document.getElementById("irprof-data").textContent);
  var app = document.getElementById("app");
  function el(tag, props, text) {
    var node = document.createElement(tag);
    for (var key in props || {}) node.setAttribute(key, props[key]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fmtNs(ns) {
    if (ns === null || ns === undefined) return "no data";
    if (ns < 1e3) return ns + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(2) + " us";
    if (ns < 1e9) return (ns / 1e6).toFixed(2) + " ms";
    return (ns / 1e9).toFixed(2) + " s";
  }
  app.textContent = "";
  var header = el("header");
  header.appendChild(el("h1", {}, "@" + DATA.function));
  header.appendChild(el("span", { class: "sub" }, DATA.op_count + " ops · " + Object.keys(DATA.nodes).length + " nodes"));
  var main = el("main");
  var bar = el("div", { class: "toolbar" });
  var search = el("input", { type: "search", id: "graph-search", placeholder: "search ops, scopes, locations" });
  var status = el("span", { class: "muted", id: "graph-status" });
  bar.appendChild(search); bar.appendChild(status);
  var wrap = el("div", { class: "graph-wrap" });
  var view = el("div", { class: "graph-view", id: "graph-view" });
  var details = el("div", { class: "details", id: "node-details" }, "Click a node. Drag to pan, wheel to zoom.");
  wrap.appendChild(view); wrap.appendChild(details);
  main.appendChild(bar); main.appendChild(wrap);
  app.appendChild(header); app.appendChild(main);
  var graph = IrprofGraph.mount(view, DATA.svg, DATA.nodes, function (id) {
    var node = DATA.nodes[id];
    details.textContent = "";
    details.appendChild(el("h3", {}, node.title || node.label));
    var rows = [["kind", node.kind], ["op", node.detail], ["scope", node.scope], ["location", node.location], ["time", fmtNs(node.total_ns)], ["share", node.share === null ? "-" : (node.share * 100).toFixed(1) + "%"], ["ops", String(node.ops)]];
    // A private-function op is titled through its call; its own IR name stays visible.
    if (node.runtime_name && node.runtime_name !== node.title) rows.splice(2, 0, ["runtime name (IR)", node.runtime_name]);
    var kv = el("div", { class: "kv" });
    rows.forEach(function (r) { kv.appendChild(el("div", {}, r[0])); kv.appendChild(el("div", { class: "mono" }, r[1] || "-")); });
    details.appendChild(kv);
  });
  search.addEventListener("input", function () {
    if (!graph) return;
    var hits = graph.search(search.value);
    status.textContent = search.value ? hits.length + " matches" : "";
  });
})();
