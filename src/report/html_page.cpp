#include "report/html_page.h"

namespace strata::report {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::heading(const std::string& text) { body_ += "<h2>" + html_escape(text) + "</h2>\n"; }

void HtmlPage::paragraph(const std::string& text) { body_ += "<p>" + html_escape(text) + "</p>\n"; }

void HtmlPage::table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  body_ += "<div class=\"scroll\"><table>\n<tr>";
  for (const auto& h : header) body_ += "<th>" + html_escape(h) + "</th>";
  body_ += "</tr>\n";
  for (const auto& r : rows) {
    body_ += "<tr>";
    for (const auto& c : r) body_ += "<td>" + html_escape(c) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</table></div>\n";
}

void HtmlPage::chart(const std::string& svg_element, const std::string& caption) {
  body_ += "<figure class=\"chart\">" + svg_element + "<figcaption>" + html_escape(caption) + "</figcaption></figure>\n";
}

std::string HtmlPage::html() const {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + html_escape(title_) +
         "</title>\n<style>\n"
         "body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }\n"
         "table { border-collapse: collapse; font-size: 0.85em; }\n"
         "th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }\n"
         "th { background: #f0f0f0; }\n"
         ".scroll { overflow-x: auto; }\n"
         "figure.chart { display: inline-block; margin: 0.5em; }\n"
         "figure.chart svg { width: 720px; height: 420px; }\n"
         "figcaption { font-size: 0.85em; color: #555; max-width: 720px; }\n"
         "</style>\n</head>\n<body>\n<h1>" +
         html_escape(title_) + "</h1>\n" + body_ + "</body>\n</html>\n";
}

}  // namespace strata::report
