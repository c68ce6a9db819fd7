// The two SVG panels of DeepInfer's page (docs/spec.md#pictures; see picture.h). Every number drawn comes from
// describe().
#include "minifloat/picture.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <vector>

#include "minifloat/describe.h"
#include "minifloat/text.h"

namespace mf {
namespace {

constexpr std::array<const Format*, 8> kFormats{&f32, &bf16, &f16, &e4m3, &e5m2, &e3m2, &e2m3, &e2m1};

// The page's palette (web/style.css uses the same three): sign red, exponent blue, mantissa amber.
constexpr const char* kSignColor = "#c8463d";
constexpr const char* kExponentColor = "#3b6fb6";
constexpr const char* kMantissaColor = "#f0a202";

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string percent(double rel) {
  if (std::isnan(rel)) return "NaN";
  if (std::isinf(rel)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", rel * 100);
  return buf;
}

std::string text(double x, double y, const std::string& s, const char* attrs = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" " + attrs + ">" + s + "</text>\n";
}

std::string rect(double x, double y, double w, double h, const char* fill) {
  return "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\" fill=\"" +
         fill + "\" stroke=\"#fff\" stroke-width=\"1\"/>\n";
}

std::string svg_open(int width, int height, const std::string& title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + std::to_string(width) + " " +
         std::to_string(height) + "\" width=\"" + std::to_string(width) + "\" height=\"" + std::to_string(height) +
         "\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\">\n<title>" + title + "</title>\n" +
         "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
}

// One strip: a cell per bit of the code, colored by field, the bit written in it.
std::string strip(const Description& d, double y, double cell) {
  const Format& f = *d.format;
  const std::string bits = bit_fields(f, d.code, "");
  std::string s = text(8, y + 15, std::string(f.name), "font-weight=\"bold\"");
  for (int i = 0; i < f.bits(); ++i) {
    const bool sign = i < f.sign_bits, exponent = !sign && i < f.sign_bits + f.exponent_bits;
    const char* color = sign ? kSignColor : exponent ? kExponentColor : kMantissaColor;
    const double x = 60 + i * cell;
    s += rect(x, y, cell, 22, color);
    s += text(x + cell / 2, y + 15, std::string(1, bits[static_cast<std::size_t>(i)]),
              exponent || sign ? "fill=\"#fff\" text-anchor=\"middle\"" : "fill=\"#000\" text-anchor=\"middle\"");
  }
  s += text(60 + f.bits() * cell + 8, y + 15,
            "= " + shortest(d.stored) + " (" + std::string(class_name(d)) + ", error " + percent(d.rel_error) + ")");
  return s;
}

}  // namespace

std::span<const Format* const> picture_formats() { return kFormats; }

std::string strips_svg(double x, const EncodeOptions& options) {
  constexpr double kCell = 16, kRow = 30, kTop = 48;
  const int height = static_cast<int>(kTop + kRow * kFormats.size() + 12);
  std::string s = svg_open(860, height, "Panel 1: " + shortest(x) + " in each format, sign | exponent | mantissa");
  s += text(8, 18, "Panel 1: x = " + shortest(x) + " in each format", "font-size=\"14\" font-weight=\"bold\"");
  s += rect(8, 27, 12, 12, kSignColor) + text(24, 37, "sign");
  s += rect(64, 27, 12, 12, kExponentColor) + text(80, 37, "exponent");
  s += rect(148, 27, 12, 12, kMantissaColor) + text(164, 37, "mantissa");
  for (std::size_t i = 0; i < kFormats.size(); ++i) {
    s += strip(describe(*kFormats[i], x, 1.0, options), kTop + kRow * static_cast<double>(i), kCell);
  }
  return s + "</svg>\n";
}

namespace {

// Panel 2's plot area: mantissa bits 0..24 across, relative error 10^-9 .. 10^0 up (log scale).
constexpr double kLeft = 70, kTop = 40, kWidth = 620, kHeight = 300, kMinLog = -9, kMaxLog = 0, kMaxBits = 24;
double px(double bits) { return kLeft + bits / kMaxBits * kWidth; }
double py(double log10_err) {
  const double t = (std::clamp(log10_err, kMinLog, kMaxLog) - kMinLog) / (kMaxLog - kMinLog);
  return kTop + (1 - t) * kHeight;
}

std::string error_axes() {
  std::string s = "<path d=\"M" + num(kLeft) + " " + num(kTop) + " V" + num(kTop + kHeight) + " H" +
                  num(kLeft + kWidth) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  for (int e = static_cast<int>(kMinLog); e <= 0; e += 3) {
    s += text(kLeft - 6, py(e) + 4, "1e" + std::to_string(e), "text-anchor=\"end\"");
  }
  for (int b = 0; b <= 24; b += 4) s += text(px(b), kTop + kHeight + 16, std::to_string(b), "text-anchor=\"middle\"");
  s += text(kLeft + kWidth / 2, kTop + kHeight + 34, "mantissa bits", "text-anchor=\"middle\"");
  // The worst relative error of rounding a normal number to m mantissa bits: half a step, 2^-(m+1).
  std::string bound = "<path d=\"";
  for (int m = 1; m <= 23; ++m) bound += (m == 1 ? "M" : " L") + num(px(m)) + " " + num(py(-(m + 1) * std::log10(2.0)));
  s += bound + "\" fill=\"none\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n";
  return s + text(px(15), py(-16 * std::log10(2.0)) + 18, "worst case of a normal number: 2^-(m+1)", "fill=\"#666\"");
}

struct Point {
  double x, y;    // the point
  double lx, ly;  // its label
  std::string label;
};

// Labels go right of their point; the formats with 1 to 3 mantissa bits crowd together, so theirs share a column
// right of that cluster. A label that would overlap one placed before moves away (down; up for exact results on the
// bottom edge), with a leader line to its point.
bool overlap(const Point& a, const Point& b) {
  const double wa = 6.5 * static_cast<double>(a.label.size()), wb = 6.5 * static_cast<double>(b.label.size());
  return a.lx < b.lx + wb && b.lx < a.lx + wa && std::abs(a.ly - b.ly) < 14;
}

void place_labels(std::vector<Point>& points) {
  const double bottom = py(kMinLog);
  // Stable: equal errors keep the formats' order, whichever standard library sorts them.
  std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.y < b.y; });
  for (std::size_t i = 0; i < points.size(); ++i) {
    Point& p = points[i];
    const bool on_bottom = p.y >= bottom;
    p.lx = p.x <= px(3) ? px(3) + 14 : p.x + 9;
    p.ly = on_bottom ? p.y - 9 : p.y + 4;
    for (bool moved = true; moved;) {
      moved = false;
      for (std::size_t j = 0; j < i; ++j) {
        if (overlap(p, points[j])) p.ly += on_bottom ? -14 : 14, moved = true;
      }
    }
  }
}

}  // namespace

std::string error_svg(double x, const EncodeOptions& options) {
  std::string s = svg_open(800, 400, "Panel 2: relative error of " + shortest(x) + " against mantissa bits");
  s += text(8, 20, "Panel 2: relative error of x = " + shortest(x) + " against mantissa bits",
            "font-size=\"14\" font-weight=\"bold\"");
  s += error_axes();
  // Exact results sit on the bottom edge, errors of 100 % or more (and NaN) on the top edge; the labels say which.
  std::vector<Point> points;
  for (const Format* f : kFormats) {
    const Description d = describe(*f, x, 1.0, options);
    const double l = std::isnan(d.rel_error) ? kMaxLog : d.rel_error > 0 ? std::log10(d.rel_error) : kMinLog;
    points.push_back({px(f->mantissa_bits), py(l), 0, 0,
                      std::string(f->name) + " " + (d.rel_error == 0 ? "exact" : percent(d.rel_error))});
  }
  place_labels(points);
  for (const Point& p : points) {
    s += "<circle cx=\"" + num(p.x) + "\" cy=\"" + num(p.y) + "\" r=\"5\" fill=\"" + kMantissaColor +
         "\" stroke=\"#333\"/>\n";
    const bool moved = std::abs(p.lx - p.x) > 10 || (std::abs(p.ly - 4 - p.y) > 1 && std::abs(p.ly + 9 - p.y) > 1);
    if (moved) {
      s += "<path d=\"M" + num(p.x + 5) + " " + num(p.y) + " L" + num(p.lx - 2) + " " + num(p.ly - 4) +
           "\" stroke=\"#bbb\"/>\n";
    }
    s += text(p.lx, p.ly, p.label);
  }
  return s + "</svg>\n";
}

}  // namespace mf
