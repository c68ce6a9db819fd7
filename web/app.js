// The converter page's glue: read the controls, ask the WebAssembly module (web/wasm.cc over the C++ library),
// show its JSON and SVG, keep the view in the address bar. No number is computed here: every code, field, stored
// value, error, scale and picture comes from the module; this file only formats and places them.
"use strict";

const NUMBER_FORMATS = "f32,bf16,f16,e4m3,e5m2,e3m2,e2m3,e2m1,ue8m0,ue4m3,e4m3fnuz,e5m2fnuz,e4m3b11fnuz,e3m4,e4m3ieee," +
                       "ue5m3";
const ROUNDING = { nearest_even: 0, toward_zero: 1, stochastic: 2, away_from_zero: 3, nearest_away: 4 };  // mf::Rounding
const OVERFLOW = { default: 0, saturate: 1, clamp: 2, nan_outside_range: 3 };                          // mf::Overflow
const $ = (id) => document.getElementById(id);

let mf = null;            // the module, once loaded
let outlier = "";         // the outlier added to the block ("" for none): part of the state, like the inputs

// ---- the module's functions, text in and text out ----
function describe(x, scale, rounding, overflow, seed) {
  return JSON.parse(mf.ccall("mf_describe", "string", ["string", "string", "number", "number", "number", "number"],
                             [x, NUMBER_FORMATS, scale, ROUNDING[rounding], OVERFLOW[overflow], seed]));
}
function block(values, scheme, rule, outlierText) {
  return JSON.parse(mf.ccall("mf_block", "string", ["string", "string", "string", "string"],
                             [values, scheme, rule, outlierText]));
}
function picture(which, x, rounding, overflow, seed) {
  return mf.ccall("mf_picture", "string", ["number", "string", "number", "number", "number"],
                  [which, x, ROUNDING[rounding], OVERFLOW[overflow], seed]);
}
function randomValues(n, seed) {
  return mf.ccall("mf_random_values", "string", ["number", "number", "number"], [n, 1, seed]);
}

// ---- formatting (display only) ----
function percent(rel) {
  if (typeof rel === "string") return rel;  // "nan", "inf"
  if (rel === 0) return "exact";
  const p = rel * 100;
  return (p < 1e-3 ? p.toExponential(2) : p.toPrecision(3)) + " %";
}
function cell(row, text, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  td.textContent = text;
  row.appendChild(td);
  return td;
}
function field(className, bits, label) {
  const span = document.createElement("span");
  span.className = "field " + className;
  span.textContent = bits;
  span.title = label;
  return span;
}

// ---- the number panel ----
function numberState() {
  return { x: $("x").value.trim(), scale: $("scale").value.trim(), rounding: $("rounding").value,
           overflow: $("overflow").value, seed: Number($("seed").value) >>> 0 };
}

function strip(f) {
  const td = document.createElement("td");
  td.className = "strip";
  if (f.sign !== null) td.appendChild(field("sign", String(f.sign), "sign"));
  td.appendChild(field("exponent", f.exponent_field, "exponent field"));
  if (f.mantissa_field) td.appendChild(field("mantissa", f.mantissa_field, "mantissa field"));
  return td;
}

function renderNumber(s) {
  const d = describe(s.x, s.scale === "" ? 1 : Number(s.scale), s.rounding, s.overflow, s.seed);
  const body = $("number-table").tBodies[0];
  body.replaceChildren();
  if (d.error) {
    $("number-summary").textContent = d.error;
    $("number-summary").classList.add("error");
    return false;
  }
  $("number-summary").classList.remove("error");
  let summary = "x = " + d.input_text;
  if (d.input_f32_bits) summary += " (f32 bits " + d.input_f32_bits + ")";
  if (d.scale !== 1) summary += "; x / " + s.scale + " = " + d.scaled_input + " is encoded";
  $("number-summary").textContent = summary;
  $("number-table").classList.toggle("scaled", d.scale !== 1);  // without a scale, value = stored
  for (const f of d.formats) {
    const row = body.insertRow();
    row.dataset.format = f.format;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = f.format;
    row.appendChild(th);
    row.appendChild(strip(f));
    cell(row, f.code, "code");
    cell(row, f.exponent_field, "exponent-field");
    cell(row, f.exponent === null ? "–" : String(f.exponent), "exponent");
    cell(row, f.class, "class");
    cell(row, f.stored_text, "stored");
    cell(row, String(f.value), "value value-col");
    cell(row, percent(f.rel_error), "error");
  }
  $("panel1").innerHTML = picture(1, s.x, s.rounding, s.overflow, s.seed);  // SVG written by the module
  $("panel2").innerHTML = picture(2, s.x, s.rounding, s.overflow, s.seed);
  return true;
}

// ---- the block panel ----
function blockState() {
  return { values: $("values").value.trim(), scheme: $("scheme").value, rule: $("rule").value, outlier };
}

function scaleText(part) {
  const s = part.scales.map((sc) => sc.code + " = " + sc.text + (sc.power ? " = " + sc.power : ""));
  let text = "shared scale " + s.join("; ");
  if (part.tensor_scale !== null) text += ", times the tensor scale " + part.tensor_scale;
  return text;
}

function renderBlock(s) {
  const r = block(s.values, s.scheme, s.rule, s.outlier);
  const body = $("block-table").tBodies[0];
  body.replaceChildren();
  if (r.error) {
    $("block-summary").textContent = r.error;
    $("block-summary").classList.add("error");
    return;
  }
  $("block-summary").classList.remove("error");
  const part = r.with_outlier || r.block;
  let summary = scaleText(part) + ". " + part.zeroed + " of " + part.nonzero + " nonzero values became 0";
  if (r.with_outlier) {
    summary = scaleText(part) + ". Without the outlier: " + r.block.zeroed + " of " + r.block.nonzero +
              " nonzero values became 0; with the outlier " + s.outlier + ": " + part.zeroed + " of " +
              part.nonzero + ".";
  }
  $("block-summary").textContent = summary;
  $("block-summary").dataset.zeroed = part.zeroed;
  part.values.forEach((v, i) => {
    const row = body.insertRow();
    if (v.became_zero) row.className = "became-zero";
    cell(row, String(i));
    cell(row, v.input_text);
    cell(row, v.code_hex, "code");
    cell(row, v.element);
    cell(row, v.stored_text + (v.became_zero ? "  ← became 0" : ""), "stored");
    cell(row, percent(v.rel_error));
  });
}

// ---- state <-> address bar ----
function writeUrl() {
  const n = numberState(), b = blockState();
  const p = new URLSearchParams();
  p.set("x", n.x);
  if (n.scale) p.set("scale", n.scale);
  if (n.rounding !== "nearest_even") p.set("rounding", n.rounding);
  if (n.overflow !== "default") p.set("overflow", n.overflow);
  if (n.seed) p.set("seed", String(n.seed));
  p.set("block", b.values.replace(/\s*[,\s]\s*/g, ","));
  p.set("scheme", b.scheme);
  if (b.rule) p.set("rule", b.rule);
  if (b.outlier) p.set("outlier", b.outlier);
  history.replaceState(null, "", "?" + p.toString());
}

function readUrl() {
  const p = new URLSearchParams(location.search);
  const set = (id, key) => { if (p.has(key)) $(id).value = p.get(key); };
  set("x", "x"); set("scale", "scale"); set("rounding", "rounding"); set("overflow", "overflow"); set("seed", "seed");
  set("scheme", "scheme"); set("rule", "rule");
  if (p.has("block")) $("values").value = p.get("block").split(",").join(", ");
  outlier = p.get("outlier") || "";
}

function update() {
  renderNumber(numberState());
  renderBlock(blockState());
  writeUrl();
}

function wire() {
  for (const id of ["x", "scale", "rounding", "overflow", "seed", "values", "scheme", "rule"]) {
    $(id).addEventListener("input", update);
  }
  for (const form of ["number-form", "block-form"]) $(form).addEventListener("submit", (e) => e.preventDefault());
  $("fill").addEventListener("click", () => {
    const n = Math.min(32, Math.max(1, Number($("count").value) || 32));
    // The seed comes from the clock: a new draw each click; the values themselves land in the URL.
    $("values").value = randomValues(n, Date.now() >>> 0).split(",").join(", ");
    update();
  });
  $("add-outlier").addEventListener("click", () => { outlier = $("outlier-value").value.trim(); update(); });
  $("remove-outlier").addEventListener("click", () => { outlier = ""; update(); });
}

readUrl();
wire();
createMinifloat().then((module) => {
  mf = module;
  $("status").textContent = "";
  document.body.classList.add("ready");
  update();
}).catch((e) => {
  $("status").textContent = "The WebAssembly codec did not load: " + e + ". Serve the page with `minifloat serve`.";
});
