// The book's calculators: Pyodide (vendored into _static/pyodide) runs calculators.py beside the model package
// (_static/calculators/model.zip); this file only builds the controls and draws what Python returns, in SVG.
// Each calculator element ends with data-numbers (the model's numbers, JSON) and data-state="ready".
"use strict";

(function () {
  const root = document.documentElement.dataset.content_root
    || (document.querySelector('script[src$="calculators.js"]').getAttribute("src").replace(/_static\/calculators\.js.*$/, ""));
  const staticURL = root + "_static/";
  const SVG = "http://www.w3.org/2000/svg";
  const COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#9c755f"];
  const KIND_COLOURS = { forward: "#4e79a7", backward: "#f28e2b", weight: "#59a14f", send: "#bab0ac", recv: "#d4cfc9" };
  let pyodide = null;

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src; s.onload = resolve; s.onerror = () => reject(new Error("cannot load " + src));
      document.head.appendChild(s);
    });
  }

  async function python() {
    if (!pyodide) {
      pyodide = (async () => {
        await loadScript(staticURL + "pyodide/pyodide.js");
        const py = await loadPyodide({ indexURL: new URL(staticURL + "pyodide/", location.href).href });
        const zip = await (await fetch(staticURL + "calculators/model.zip")).arrayBuffer();
        py.unpackArchive(zip, "zip", { extractDir: "/home/pyodide/book" });
        py.runPython("import sys; sys.path.insert(0, '/home/pyodide/book'); import calculators");
        return py;
      })();
    }
    return pyodide;
  }

  function el(tag, attrs, parent, ns) {
    const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    if (parent) parent.appendChild(e);
    return e;
  }

  function buildControls(box, name, spec, onChange) {
    el("p", { class: "d2lmp-calc-title", text: spec.title }, box);
    const form = el("fieldset", { "aria-label": spec.title }, box);
    const read = {};
    spec.controls.forEach(c => {
      const id = `d2lmp-${name}-${c.name}`;
      const row = el("div", { class: "d2lmp-row" }, form);
      el("label", { for: id, text: c.label }, row);
      let input;
      if (c.kind === "steps") {
        input = el("input", { id, type: "range", min: 0, max: c.values.length - 1, step: 1,
                              value: Math.max(0, c.values.indexOf(c.value)), "data-control": c.name }, row);
        const shown = el("output", { for: id, class: "d2lmp-value" }, row);
        const show = () => { shown.textContent = c.labels[+input.value];
                             input.setAttribute("aria-valuetext", c.labels[+input.value]); };
        show(); input.addEventListener("input", show);
        read[c.name] = () => c.values[+input.value];
      } else if (c.kind === "choice") {
        input = el("select", { id, "data-control": c.name }, row);
        c.options.forEach(([label, value]) => {
          const o = el("option", { value: JSON.stringify(value), text: label }, input);
          if (value === c.value) o.selected = true;
        });
        read[c.name] = () => JSON.parse(input.value);
      } else {
        input = el("input", { id, type: "number", min: c.min, max: c.max, step: c.step, value: c.value,
                              "data-control": c.name }, row);
        read[c.name] = () => { const v = parseFloat(input.value); return Number.isFinite(v) ? v : c.value; };
      }
      input.addEventListener("input", onChange);
      input.addEventListener("change", onChange);
    });
    return () => Object.fromEntries(Object.entries(read).map(([k, f]) => [k, f()]));
  }

  function fmt(v) { return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(3); }

  function axisTitle(svg, x, y, text) { el("text", { x, y, text }, svg, SVG); }

  // Legend entries [name, colour index, x] in rows that fit between x = from and x = to.
  function legendRows(names, from, to) {
    const rows = [];
    let row = [], lx = from;
    names.forEach((n, k) => {
      const w = 24 + 7 * n.length;
      if (row.length && lx + w > to) { rows.push(row); row = []; lx = from; }
      row.push([n, k, lx]); lx += w;
    });
    if (row.length) rows.push(row);
    return rows;
  }

  function drawBars(chart) {
    const names = [...new Set(chart.bars.flatMap(b => Object.keys(b.parts)))];
    const totals = chart.bars.map(b => Object.values(b.parts).reduce((a, v) => a + v, 0));
    const top = Math.max(...totals, chart.limit ? chart.limit.value : 0) * 1.05 || 1;
    const longest = Math.max(...chart.bars.map(b => b.label.length), 10);
    const left = 7 * longest + 10, W = Math.max(560, left + 420), rowH = 26, right = 20;
    const legend = legendRows(names.length > 1 ? names : [], left, W - 130);
    const H = 40 + rowH * chart.bars.length + 18 * Math.max(1, legend.length) + 16;
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" }, null, SVG);
    const x = v => left + (W - left - right) * v / top;
    chart.bars.forEach((b, i) => {
      const y = 10 + i * rowH;
      el("text", { x: 4, y: y + 15, text: b.label }, svg, SVG);
      let at = 0;
      names.forEach((n, k) => {
        const v = b.parts[n] || 0;
        if (v > 0) el("rect", { x: x(at), y, width: Math.max(0.5, x(at + v) - x(at)), height: rowH - 6,
                                fill: COLOURS[k % COLOURS.length] }, svg, SVG);
        at += v;
      });
      el("text", { x: Math.min(x(at) + 4, W - 60), y: y + 15, text: fmt(at) }, svg, SVG);
    });
    if (chart.limit) {
      const lx = x(chart.limit.value);
      el("line", { x1: lx, x2: lx, y1: 4, y2: 10 + rowH * chart.bars.length, stroke: "#c00", "stroke-dasharray": "4 3" }, svg, SVG);
      el("text", { x: Math.max(left, lx - 120), y: 22 + rowH * chart.bars.length, text: chart.limit.label }, svg, SVG);
    }
    const ly = 40 + rowH * chart.bars.length + 8;
    legend.forEach((row, r) => row.forEach(([n, k, lx]) => {
      el("rect", { x: lx, y: ly + 18 * r - 9, width: 10, height: 10, fill: COLOURS[k % COLOURS.length] }, svg, SVG);
      el("text", { x: lx + 14, y: ly + 18 * r, text: n }, svg, SVG);
    }));
    axisTitle(svg, W - 120, ly, chart.unit);
    return [svg, `Bar chart, ${chart.unit}: ` + chart.bars.map((b, i) => `${b.label} ${fmt(totals[i])}`).join(", ")];
  }

  function drawTimeline(chart) {
    const end = Math.max(...chart.blocks.map(b => b.end)) || 1;
    const W = 640, left = 50, right = 10, laneH = 22, H = 20 + laneH * chart.lanes + 48;
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" }, null, SVG);
    const x = t => left + (W - left - right) * t / end;
    for (let r = 0; r < chart.lanes; r++) el("text", { x: 4, y: 10 + r * laneH + 14, text: `${chart.lane_label} ${r}` }, svg, SVG);
    chart.blocks.forEach(b => {
      const comm = b.kind === "send" || b.kind === "recv";
      const y = 10 + b.lane * laneH + (comm ? 12 : 0);
      el("rect", { x: x(b.start), y, width: Math.max(0.5, x(b.end) - x(b.start)), height: comm ? 6 : 11,
                   fill: KIND_COLOURS[b.kind] || "#888", stroke: "#fff", "stroke-width": 0.5 }, svg, SVG);
    });
    axisTitle(svg, left, H - 24, `${chart.unit}: 0 to ${fmt(end)}`);
    [["forward", "forward"], ["backward", "backward"], ["weight gradients", "weight"], ["messages", "send"]]
      .forEach(([name, kind], i) => {
        el("rect", { x: left + 140 * i, y: H - 15, width: 10, height: 10, fill: KIND_COLOURS[kind] }, svg, SVG);
        el("text", { x: left + 140 * i + 14, y: H - 6, text: name }, svg, SVG);
      });
    return [svg, `Timeline of ${chart.lanes} ranks over ${fmt(end)} time units`];
  }

  function drawCurve(chart) {
    const W = 560, H = 260, left = 50, right = 14, top = 10, bottom = 40;
    const xs = chart.points.map(p => Math.log10(p[0])), ys = chart.points.map(p => p[1]);
    const x0 = Math.min(...xs), x1 = Math.max(...xs), y1 = Math.min(Math.max(...ys), 4 * Math.min(...ys)) * 1.05;
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" }, null, SVG);
    const X = v => left + (W - left - right) * (Math.log10(v) - x0) / (x1 - x0 || 1);
    const Y = v => top + (H - top - bottom) * (1 - Math.min(v, y1) / y1);
    el("polyline", { points: chart.points.map(p => `${X(p[0])},${Y(p[1])}`).join(" "), fill: "none",
                     stroke: COLOURS[0], "stroke-width": 2 }, svg, SVG);
    el("line", { x1: left, x2: W - right, y1: H - bottom, y2: H - bottom, stroke: "currentColor" }, svg, SVG);
    el("line", { x1: left, x2: left, y1: top, y2: H - bottom, stroke: "currentColor" }, svg, SVG);
    const mx = X(chart.mark.x);
    el("line", { x1: mx, x2: mx, y1: top, y2: H - bottom, stroke: "#c00", "stroke-dasharray": "4 3" }, svg, SVG);
    el("text", { x: mx + 4, y: top + 12, text: `${chart.mark.label}: ${fmt(chart.mark.x)}` }, svg, SVG);
    axisTitle(svg, left, H - 22, `${chart.x_label}: ${fmt(10 ** x0)} to ${fmt(10 ** x1)}`);
    axisTitle(svg, 4, top + 10, `${fmt(y1)} %`);
    axisTitle(svg, left + 4, H - 6, chart.y_label);
    return [svg, `Curve of ${chart.y_label} against ${chart.x_label}; minimum near ${chart.mark.label}`];
  }

  // Log-log roofs (one line per roof: sloped to its ridge; the flat matrix rate in black) and the point on them,
  // in the colour of the link it sends over.
  function drawRoofline(chart) {
    const W = 640, left = 56, right = 14, top = 10, plotH = 220, bottom = 44;
    const ends = chart.lines.flatMap(l => l.points);
    const lx0 = Math.log10(Math.min(...ends.map(p => p[0]))), lx1 = Math.log10(Math.max(...ends.map(p => p[0])));
    const ly0 = Math.log10(Math.min(...ends.map(p => p[1])) / 1.5), ly1 = Math.log10(Math.max(...ends.map(p => p[1])) * 2);
    const labels = [...chart.lines.map(l => l.label), chart.point.label];
    const H = top + plotH + bottom + 18 * labels.length;
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" }, null, SVG);
    const X = v => left + (W - left - right) * (Math.log10(v) - lx0) / (lx1 - lx0 || 1);
    const Y = v => top + plotH * (1 - (Math.log10(v) - ly0) / (ly1 - ly0 || 1));
    const colour = (l, i) => l.flat ? "currentColor" : COLOURS[i % COLOURS.length];
    el("line", { x1: left, x2: W - right, y1: top + plotH, y2: top + plotH, stroke: "currentColor" }, svg, SVG);
    el("line", { x1: left, x2: left, y1: top, y2: top + plotH, stroke: "currentColor" }, svg, SVG);
    chart.lines.forEach((l, i) => el("polyline", { points: l.points.map(p => `${X(p[0])},${Y(p[1])}`).join(" "),
                                                   fill: "none", stroke: colour(l, i), "stroke-width": 2 }, svg, SVG));
    const px = X(chart.point.x), py = Y(chart.point.y), pointColour = COLOURS[chart.point.line % COLOURS.length];
    el("circle", { cx: px, cy: py, r: 6, fill: pointColour, stroke: "currentColor", "stroke-width": 1.5 }, svg, SVG);
    axisTitle(svg, left + 4, top + 12, `${fmt(10 ** ly1)} TFLOP/s`);
    axisTitle(svg, left + 4, top + plotH - 6, `${fmt(10 ** ly0)}`);
    axisTitle(svg, left, top + plotH + 16, `${fmt(10 ** lx0)}`);
    axisTitle(svg, W - right - 60, top + plotH + 16, `${fmt(10 ** lx1)}`);
    axisTitle(svg, left + 80, top + plotH + 16, `${chart.x_label} (log scale)`);
    axisTitle(svg, left, top + plotH + 34, `y: ${chart.y_label} (log scale)`);
    labels.forEach((label, i) => {
      const y = top + plotH + bottom + 18 * i + 8;
      if (i < chart.lines.length)
        el("line", { x1: left, x2: left + 20, y1: y - 4, y2: y - 4, stroke: colour(chart.lines[i], i), "stroke-width": 2 }, svg, SVG);
      else el("circle", { cx: left + 10, cy: y - 4, r: 5, fill: pointColour, stroke: "currentColor" }, svg, SVG);
      el("text", { x: left + 26, y, text: label }, svg, SVG);
    });
    return [svg, `Log-log roofline, ${chart.y_label} against ${chart.x_label}: ` + chart.lines.map(l => l.label).join("; ")
                 + `; the point: ${chart.point.label}, ${fmt(chart.point.x)} FLOP/byte, ${fmt(chart.point.y)} TFLOP/s`];
  }

  const DRAW = { bars: drawBars, timeline: drawTimeline, curve: drawCurve, roofline: drawRoofline };

  async function start(box) {
    const name = box.dataset.calc;
    const status = box.querySelector(".d2lmp-calc-status");
    try {
      const py = await python();
      const calc = py.globals.get("calculators");
      const spec = JSON.parse(calc.controls(name));
      status.textContent = "Computed in this page by the series' model package (Python, via Pyodide).";
      const text = el("p", { class: "d2lmp-calc-text", "aria-live": "polite" });
      const figure = el("figure", { class: "d2lmp-calc-chart" });
      let values, latest = 0;
      const update = async () => {
        const asked = JSON.stringify(values()), id = ++latest;
        if (spec.slow) {  // let the page show it before Python holds the page for seconds
          text.textContent = "computing…";
          box.setAttribute("aria-busy", "true");
          await new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 0)));
          if (id !== latest) return;
        }
        const result = JSON.parse(calc.run(name, asked));
        box.removeAttribute("aria-busy");
        text.textContent = result.text;
        const [svg, alt] = DRAW[result.chart.type](result.chart);
        svg.setAttribute("aria-label", alt);
        el("title", { text: alt }, svg, SVG);
        figure.replaceChildren(svg);
        box.dataset.values = asked;
        box.dataset.numbers = JSON.stringify(result.numbers);
        box.dataset.state = "ready";
      };
      values = buildControls(box, name, spec, update);
      box.append(text, figure);
      await update();
    } catch (err) {
      status.textContent = "The calculator could not start: " + err.message;
      box.dataset.state = "failed";
      throw err;
    }
  }

  function init() { document.querySelectorAll(".d2lmp-calc[data-calc]").forEach(start); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
