"""The monitor's status page (``GET /``): one HTML document with its style and script
inline, loading nothing else but ``status`` from the broker every second (no CDN, no
font, no image: a machine without outside access shows it whole). Every number it
shows is in an element with a ``data-k`` attribute naming the ``/status`` field it
comes from, so a test (and a curious operator) can tell which is which."""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>pubsift broker</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; background: #fafafa; }
  h1 { font-size: 1.4em; margin: 0 0 .2em; }
  h2 { font-size: 1.05em; margin: 1.4em 0 .4em; }
  .meta { color: #666; }
  table { border-collapse: collapse; background: #fff; }
  th, td { border: 1px solid #ddd; padding: .25em .7em; text-align: right; }
  th:first-child, td:first-child { text-align: left; }
  th { background: #f0f0f0; font-weight: 600; }
  .up { color: #176f2c; font-weight: 600; }
  .down { color: #b3261e; font-weight: 600; }
  #updated.stale { color: #b3261e; }
  .grid { display: flex; flex-wrap: wrap; gap: 2em; }
</style>
</head>
<body>
<h1>broker <span id="broker" data-k="broker">…</span></h1>
<div class="meta">pubsift <span id="version" data-k="version"></span>,
  listening on <span data-k="listen"></span>, strategy <span data-k="strategy"></span>,
  up <span id="uptime" data-k="uptime_seconds"></span> ·
  <span id="updated">loading</span></div>

<div class="grid">
<div>
<h2>Connections</h2>
<table id="connections"><tr><th>role</th><th>open</th></tr></table>
</div>
<div>
<h2>Rates (per second)</h2>
<table id="rates"><tr><th></th><th>last 1 s</th><th>last 1 min</th></tr></table>
</div>
<div>
<h2>Latency (frame in to notifications written)</h2>
<table id="latency"><tr><th>notifications</th><th>p50 ≤ s</th><th>p99 ≤ s</th></tr>
<tr><td data-k="latency_seconds.count"></td><td data-k="latency_seconds.p50"></td>
<td data-k="latency_seconds.p99"></td></tr></table>
</div>
</div>

<h2>Neighbours</h2>
<table id="neighbours"><tr><th>broker</th><th>state</th><th>address</th><th>messages in</th>
<th>forwarded to</th><th>admin to</th></tr></table>

<h2>Routing tables</h2>
<table id="models"><tr><th>model</th><th>subscriptions local</th><th>remote</th>
<th>covering ratio</th><th>advertisements local</th><th>remote</th></tr></table>

<h2>Counters</h2>
<table id="counters"><tr><th>counter</th><th>total</th></tr></table>

<script>
"use strict";
const RATES = ["publications_received", "forwards_received", "messages_received",
               "notifications_delivered", "forwarded"];
function fmt(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "number" && !Number.isInteger(v)) return v.toFixed(v < 10 ? 3 : 1);
  return String(v);
}
function uptime(v) {
  const s = Math.floor(v), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600);
  const m = Math.floor(s % 3600 / 60);
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + (s % 60) + "s";
}
function cell(tr, key, value, cls) {
  const td = document.createElement("td");
  if (key) td.dataset.k = key;
  td.textContent = fmt(value);
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}
function rows(table, items, fill) {
  while (table.rows.length > 1) table.deleteRow(1);
  for (const item of items) { const tr = table.insertRow(); fill(tr, item); }
}
function show(s) {
  for (const el of document.querySelectorAll("body > h1 [data-k], .meta [data-k], #latency [data-k]")) {
    let v = s;
    for (const part of el.dataset.k.split(".")) v = v == null ? v : v[part];
    el.textContent = el.dataset.k === "uptime_seconds" ? uptime(v) : fmt(v);
  }
  document.title = "pubsift broker " + s.broker;
  rows(document.getElementById("connections"), Object.entries(s.connections), (tr, [role, n]) => {
    cell(tr, null, role); cell(tr, "connections." + role, n);
  });
  rows(document.getElementById("rates"), RATES, (tr, k) => {
    cell(tr, null, k.replace(/_/g, " "));
    cell(tr, "rates.1s." + k, s.rates["1s"][k]);
    cell(tr, "rates.1m." + k, s.rates["1m"][k]);
  });
  rows(document.getElementById("neighbours"), s.neighbours, (tr, n) => {
    tr.dataset.neighbour = n.id || n.address;
    cell(tr, "id", n.id || "(not linked)");
    cell(tr, "state", n.state, n.state);
    cell(tr, "address", n.address);
    cell(tr, "messages_in", n.messages_in);
    cell(tr, "forwarded_to", n.forwarded_to);
    cell(tr, "admin_to", n.admin_to);
  });
  rows(document.getElementById("models"), Object.entries(s.models), (tr, [m, t]) => {
    tr.dataset.model = m;
    const subs = t.subscriptions || {}, advs = t.advertisements || {};
    cell(tr, null, m);
    cell(tr, "subscriptions.local", subs.local);
    cell(tr, "subscriptions.remote", subs.remote);
    cell(tr, "subscriptions.covering_ratio", subs.covering_ratio);
    cell(tr, "advertisements.local", advs.local);
    cell(tr, "advertisements.remote", advs.remote);
  });
  const counters = Object.entries(s.counters).filter(([k, v]) => typeof v === "number");
  for (const [reason, n] of Object.entries(s.counters.frame_errors || {}))
    counters.push(["frame_errors." + reason, n]);
  rows(document.getElementById("counters"), counters, (tr, [k, v]) => {
    cell(tr, null, k.replace(/_/g, " ")); cell(tr, "counters." + k, v);
  });
  const u = document.getElementById("updated");
  u.textContent = "updated " + new Date().toLocaleTimeString();
  u.className = "";
  document.body.dataset.loaded = String(Number(document.body.dataset.loaded || 0) + 1);
}
async function refresh() {
  try {
    const r = await fetch("status", {cache: "no-store", credentials: "same-origin"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    show(await r.json());
  } catch (e) {
    const u = document.getElementById("updated");
    u.textContent = "not updated: " + e.message;
    u.className = "stale";
  }
  setTimeout(refresh, 1000);
}
refresh();
</script>
</body>
</html>
"""
