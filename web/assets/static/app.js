// relq web: live rates on the overview, select-all on dead letters. No dependencies; the
// pages work without this script, it only adds what needs one.
"use strict";
(function () {
  var SVG = "http://www.w3.org/2000/svg";
  var WINDOW = 60;        // samples kept: about a minute at one a second
  var GROWING = 10;       // samples over which a growing ready count is a problem

  function fmtNum(n) { return Number(n).toLocaleString("en-US"); }
  function fmtRate(r) { return r >= 100 ? Math.round(r).toString() : r >= 10 ? r.toFixed(1) : r.toFixed(2); }
  function fmtAge(ms) {
    if (!ms) return "–";
    var s = Math.floor(ms / 1000);
    if (ms < 1000) return ms + "ms";
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    if (s < 172800) return Math.floor(s / 3600) + "h " + Math.floor(s % 3600 / 60) + "m";
    return Math.floor(s / 86400) + "d " + Math.floor(s % 86400 / 3600) + "h";
  }
  function setText(el, text) { if (el && el.textContent !== text) el.textContent = text; }
  function fmtWhen(ms) { return new Date(ms).toISOString().slice(0, 19).replace("T", " ") + " UTC"; }

  // line draws one series into an svg of the given size, scaled to top.
  function line(svg, values, top, w, h, cls) {
    if (values.length < 2) return;
    var step = w / (WINDOW - 2), right = values.length - 1; // the newest at the right edge
    var pts = values.map(function (v, i) {
      return (w - (right - i) * step).toFixed(1) + "," + (h - 1 - (top ? v / top : 0) * (h - 2)).toFixed(1);
    });
    var p = document.createElementNS(SVG, "polyline");
    p.setAttribute("points", pts.join(" "));
    p.setAttribute("class", cls);
    p.setAttribute("fill", "none");
    p.setAttribute("stroke", "currentColor");
    p.setAttribute("stroke-width", "1.5");
    p.setAttribute("vector-effect", "non-scaling-stroke");
    svg.appendChild(p);
  }
  function draw(svg, series, w, h) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var top = 0;
    series.forEach(function (s) { s.values.forEach(function (v) { top = Math.max(top, v); }); });
    series.forEach(function (s) { line(svg, s.values, top, w, h, s.cls); });
  }

  function overview(table) {
    var url = table.getAttribute("data-poll");
    var live = document.getElementById("live");
    var chart = document.getElementById("chart");
    var hist = {};   // key → samples {at, published, acked, nacked, deadLettered, ready}
    var first = {};  // key → the first sample, to tell dead letters that arrived while watching
    var totals = []; // page-wide rates per sample

    function rate(a, b, f) { var dt = (b.at - a.at) / 1000; return dt > 0 ? Math.max(0, (b[f] - a[f]) / dt) : 0; }
    function rates(h) {
      var out = { pub: [], ack: [], nack: [], dead: [] };
      for (var i = 1; i < h.length; i++) {
        out.pub.push(rate(h[i - 1], h[i], "published")); out.ack.push(rate(h[i - 1], h[i], "acked"));
        out.nack.push(rate(h[i - 1], h[i], "nacked")); out.dead.push(rate(h[i - 1], h[i], "deadLettered"));
      }
      return out;
    }
    function growing(h) {
      if (h.length < GROWING) return false;
      var s = h.slice(-GROWING), ups = 0;
      for (var i = 1; i < s.length; i++) if (s[i].ready > s[i - 1].ready) ups++;
      return s[s.length - 1].ready > s[0].ready && ups * 3 >= (s.length - 1) * 2 &&
        s[s.length - 1].published - s[0].published > s[s.length - 1].acked - s[0].acked;
    }
    function tag(text, cls, title) {
      var t = document.createElement("span"); t.className = "tag " + cls; t.textContent = text;
      if (title) t.title = title;
      return t;
    }
    // lost: the tags of what Redis lost, as the page draws them (overview.html's "lost"); red
    // when it happened while the page was open.
    function lost(r, was, at, list) {
      var n = r.reregistered;
      if (n > 0) {
        var when = r.reregisteredAtMs ? " · " + fmtAge(Math.max(1, at - r.reregisteredAtMs)) + " ago" : "";
        list.push(tag("re-registered " + fmtNum(n) + "×" + when, n > was.reregistered ? "bad" : "warn",
          "Its state vanished from Redis (a restart without persistence, a failover, FLUSHALL, keys deleted by another client) " +
          "and its subscriptions registered it again: " + fmtNum(n) + (n === 1 ? " time" : " times") +
          (r.reregisteredAtMs ? ", the latest at " + fmtWhen(r.reregisteredAtMs) : "") + ". Messages it held then may be lost."));
      }
      var d = r.backlogDropped;
      if (d > 0) {
        list.push(tag("backlog dropped " + fmtNum(d), d > was.backlogDropped ? "bad" : "warn",
          "The topic's backlog dropped " + fmtNum(d) + (d === 1 ? " message" : " messages") +
          ", the oldest first, past its limit while the topic had no group: no group received them."));
      }
    }

    function apply(data) {
      var sum = { pub: 0, ack: 0, nack: 0, dead: 0 };
      data.rows.forEach(function (r) {
        var tr = table.querySelector('tr[data-key="' + CSS.escape(r.key) + '"]');
        if (!tr) return;
        var h = hist[r.key] || (hist[r.key] = []);
        var sample = { at: data.at, published: r.published, acked: r.acked, nacked: r.nacked, deadLettered: r.deadLettered, ready: r.ready,
          reregistered: r.reregistered, backlogDropped: r.backlogDropped };
        h.push(sample);
        if (h.length > WINDOW) h.shift();
        if (!first[r.key]) first[r.key] = sample;
        function cell(f) { return tr.querySelector('[data-f="' + f + '"]'); }
        setText(cell("ready"), fmtNum(r.ready));
        setText(cell("delayed"), fmtNum(r.delayed));
        setText(cell("pending"), fmtNum(r.pending));
        setText(cell("backlog"), fmtNum(r.backlog));
        setText(cell("oldestReady"), fmtAge(r.oldestReadyMs));
        setText(cell("oldestPending"), fmtAge(r.oldestPendingMs));
        var dead = cell("dead");
        if (dead) {
          var a = dead.querySelector("a");
          if (r.dead > 0 && !a) {
            a = document.createElement("a"); a.className = "bad"; a.href = dead.getAttribute("data-href");
            dead.textContent = ""; dead.appendChild(a);
          }
          if (a && r.dead > 0) setText(a, fmtNum(r.dead)); else setText(dead, "0");
        }
        var rs = rates(h), n = rs.pub.length;
        var last = { pub: n ? rs.pub[n - 1] : 0, ack: n ? rs.ack[n - 1] : 0, nack: n ? rs.nack[n - 1] : 0, dead: n ? rs.dead[n - 1] : 0 };
        ["pub", "ack", "nack", "dead"].forEach(function (k) { sum[k] += last[k]; });
        if (n && !tr.hasAttribute("data-backlog")) {
          setText(cell("rPub"), fmtRate(last.pub)); setText(cell("rAck"), fmtRate(last.ack));
          setText(cell("rNack"), fmtRate(last.nack)); setText(cell("rDead"), fmtRate(last.dead));
        }
        var spark = tr.querySelector("svg.spark");
        if (spark && !tr.hasAttribute("data-backlog")) draw(spark, [{ values: rs.pub, cls: "s-pub" }, { values: rs.ack, cls: "s-ack" }, { values: rs.dead, cls: "s-dead" }], 120, 24);
        var probs = cell("problems"), list = [];
        if (r.gone) list.push(tag("deleted", ""));
        if (r.stuck) list.push(tag("stuck pending", "bad"));
        if (r.deadLettered > first[r.key].deadLettered) list.push(tag("new dead letters", "bad"));
        if (growing(h)) list.push(tag("backlog growing", "warn"));
        lost(r, first[r.key], data.at, list);
        if (probs) {
          var text = list.map(function (t) { return t.className + ":" + t.textContent; }).join("|");
          if (probs.getAttribute("data-shown") !== text) {
            probs.textContent = "";
            list.forEach(function (t) { probs.appendChild(t); });
            probs.setAttribute("data-shown", text);
          }
        }
        tr.classList.toggle("problem", list.some(function (t) { return t.className.indexOf("bad") >= 0; }));
        tr.classList.toggle("warn", list.length > 0);
      });
      totals.push(sum);
      if (totals.length > WINDOW - 1) totals.shift();
      if (chart) draw(chart, ["pub", "ack", "nack", "dead"].map(function (k) {
        return { values: totals.map(function (t) { return t[k]; }), cls: "s-" + k };
      }), 600, 80);
    }

    var busy = false;
    function poll() {
      if (busy || document.hidden) return;
      busy = true;
      fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (res) { if (!res.ok) throw new Error(res.status); return res.json(); })
        .then(function (data) { apply(data); live.textContent = "live"; live.className = "live on"; })
        .catch(function () { live.textContent = "disconnected, retrying"; live.className = "live off"; })
        .finally(function () { busy = false; });
    }
    poll();
    setInterval(poll, 1000);
  }

  function selectAll(box) {
    box.addEventListener("change", function () {
      document.querySelectorAll('input[name="ids"]').forEach(function (c) { c.checked = box.checked; });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var table = document.getElementById("overview");
    if (table) overview(table);
    var box = document.getElementById("select-all");
    if (box) selectAll(box);
  });
})();
