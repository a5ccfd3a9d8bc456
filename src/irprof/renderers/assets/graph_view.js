// Pan, zoom, search and click for a Graphviz SVG; no network, no libraries.
// The SVG arrives as a string inside the page's JSON data and is parsed as XML, never as HTML,
// then scrubbed of scripts and event attributes before it is attached.
"use strict";
var IrprofGraph = (function () {
  function scrub(root) {
    var bad = root.querySelectorAll("script, foreignObject, iframe, object, embed");
    for (var i = 0; i < bad.length; i++) bad[i].remove();
    var all = root.querySelectorAll("*");
    for (var j = 0; j < all.length; j++) {
      var attrs = Array.prototype.slice.call(all[j].attributes);
      for (var k = 0; k < attrs.length; k++) {
        var name = attrs[k].name.toLowerCase();
        var value = String(attrs[k].value).trim().toLowerCase();
        if (name.indexOf("on") === 0 || (name.indexOf("href") >= 0 && value.indexOf("javascript:") === 0)) {
          all[j].removeAttribute(attrs[k].name);
        }
      }
    }
  }

  function mount(container, svgText, nodes, onPick) {
    container.textContent = "";
    var doc = new DOMParser().parseFromString(svgText, "image/svg+xml");
    var svg = doc.documentElement;
    if (!svg || svg.nodeName.toLowerCase() !== "svg") {
      container.textContent = "graph could not be drawn";
      return null;
    }
    scrub(svg);
    svg = document.importNode(svg, true);
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    container.appendChild(svg);
    var box = svg.viewBox.baseVal;
    var view = { x: box.x, y: box.y, w: box.width, h: box.height };
    var home = { x: view.x, y: view.y, w: view.w, h: view.h };
    function apply() { svg.setAttribute("viewBox", view.x + " " + view.y + " " + view.w + " " + view.h); }
    container.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var rect = container.getBoundingClientRect();
      var fx = (ev.clientX - rect.left) / rect.width, fy = (ev.clientY - rect.top) / rect.height;
      var scale = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
      var nw = view.w * scale, nh = view.h * scale;
      view.x += (view.w - nw) * fx; view.y += (view.h - nh) * fy; view.w = nw; view.h = nh;
      apply();
    }, { passive: false });
    var drag = null;
    container.addEventListener("mousedown", function (ev) { drag = { x: ev.clientX, y: ev.clientY, moved: false }; });
    window.addEventListener("mouseup", function () { setTimeout(function () { drag = null; }, 0); });
    container.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var rect = container.getBoundingClientRect();
      var dx = (ev.clientX - drag.x) * view.w / rect.width, dy = (ev.clientY - drag.y) * view.h / rect.height;
      if (Math.abs(ev.clientX - drag.x) + Math.abs(ev.clientY - drag.y) > 2) drag.moved = true;
      view.x -= dx; view.y -= dy; drag.x = ev.clientX; drag.y = ev.clientY; apply();
    });
    var elements = {};
    var groups = svg.querySelectorAll("g.node");
    for (var i = 0; i < groups.length; i++) {
      // irprof's op graphs name nodes `node-<id>`; other DOT (the event DAG) is keyed by title.
      var id = groups[i].getAttribute("id") || "";
      if (id.indexOf("node-") === 0) id = id.slice(5);
      else { var title = groups[i].querySelector("title"); id = title ? title.textContent : ""; }
      if (!Object.prototype.hasOwnProperty.call(nodes, id)) continue;
      elements[id] = groups[i];
      groups[i].addEventListener("click", (function (nodeId) {
        return function (ev) {
          if (drag && drag.moved) return;
          ev.stopPropagation();
          pick(nodeId);
        };
      })(id));
    }
    function pick(nodeId) {
      for (var key in elements) elements[key].classList.remove("picked");
      if (elements[nodeId]) elements[nodeId].classList.add("picked");
      onPick(nodeId);
    }
    function centre(nodeId) {
      var el = elements[nodeId];
      if (!el) return;
      var b = el.getBBox();
      var target = { w: Math.min(home.w, Math.max(b.width * 6, 400)), h: 0 };
      target.h = target.w * (home.h / home.w);
      // Graphviz puts nodes under a transformed group; map the box through it.
      var g = svg.querySelector("g.graph");
      var t = g && g.transform.baseVal.consolidate();
      var ox = t ? t.matrix.e : 0, oy = t ? t.matrix.f : 0;
      view.w = target.w; view.h = target.h;
      view.x = b.x + ox + b.width / 2 - view.w / 2; view.y = b.y + oy + b.height / 2 - view.h / 2;
      apply();
    }
    function search(text) {
      var needle = text.trim().toLowerCase();
      var hits = [];
      for (var key in elements) {
        var node = nodes[key];
        var hay = [node.label, node.title, node.runtime_name || "", node.location, node.scope, node.detail].join("\n").toLowerCase();
        var hit = needle.length > 0 && hay.indexOf(needle) >= 0;
        elements[key].classList.toggle("match", hit);
        if (hit) hits.push(key);
      }
      if (hits.length) centre(hits[0]);
      return hits;
    }
    function reset() { view = { x: home.x, y: home.y, w: home.w, h: home.h }; apply(); }
    return { pick: pick, search: search, reset: reset, centre: centre };
  }
  return { mount: mount };
})();
