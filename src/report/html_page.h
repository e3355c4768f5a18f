// One self-contained HTML page: headings, paragraphs, tables and inline SVG charts, with its
// style in the page. It loads nothing from anywhere (no script, font or stylesheet), so it
// opens offline and from a mail attachment as it does from disk.
#pragma once
#include <string>
#include <vector>

namespace strata::report {

std::string html_escape(const std::string& s);

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);
  void heading(const std::string& text);  // a section (h2)
  void paragraph(const std::string& text);
  void table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);
  void chart(const std::string& svg_element, const std::string& caption);
  std::string html() const;

 private:
  std::string title_;
  std::string body_;
};

}  // namespace strata::report
