"""HTML (Sphinx, DocBook and hand-written manuals) to candidate prose
paragraphs, with html.parser from the standard library.

Dropped with everything inside them: scripts, styles, <pre> (code), tables,
forms, navigation, headers and footers, tables of contents, sidebars,
signatures of API entries, and the language and search menus of the
manuals read here (by tag, class or id). Every block element ends a
paragraph; inline elements (links, <code>, emphasis) keep their text.
"""

from html.parser import HTMLParser

_SKIP_TAGS = {"script", "style", "pre", "table", "form", "nav", "header",
              "footer", "head", "svg", "math", "select", "button", "textarea"}
# Classes and ids of navigation, tables of contents, menus and signatures
# in the manuals this corpus reads (Sphinx, DocBook, Django, SQLite, Apache).
_SKIP_NAMES = {
    "navheader", "navfooter", "toc", "sphinxsidebar", "sphinxsidebarwrapper",
    "related", "nav", "sidebar", "hd", "ft", "global-nav", "searchbox",
    "highlight", "menu", "submenu", "searchmenu", "tagline", "fancy_toc",
    "fancy-toc1", "fancy-toc2", "nosearch", "footer", "page-header",
    "quickview", "toplang", "bottomlang", "path", "sig", "sig-object",
    "breadcrumbs", "headerlink", "linenos", "toc-wrapper", "menu-wrapper",
}
_BLOCK_TAGS = {"p", "div", "li", "dd", "dt", "h1", "h2", "h3", "h4", "h5",
               "h6", "blockquote", "br", "section", "article", "ul", "ol",
               "dl", "tr", "td", "th", "hr", "caption", "figure",
               "figcaption", "body", "html", "aside", "main"}
_VOID_TAGS = {"br", "hr", "img", "meta", "link", "input", "area", "base",
              "col", "embed", "source", "track", "wbr", "param"}


def _skipped(tag, attrs):
    if tag in _SKIP_TAGS:
        return True
    for name, value in attrs:
        if name in ("class", "id") and value and _SKIP_NAMES.intersection(value.split()):
            return True
    return False


class _Extractor(HTMLParser):
    """Collects the text of block elements outside skipped subtrees."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paragraphs = []
        self._current = []
        self._open = []  # (tag, skipped) of every open non-void element
        self._skip_depth = 0

    def _flush(self):
        if self._current:
            self.paragraphs.append("".join(self._current))
            self._current = []

    def handle_starttag(self, tag, attrs):
        if tag in _BLOCK_TAGS:
            self._flush()
        if tag in _VOID_TAGS:
            return
        skipped = _skipped(tag, attrs)
        self._open.append((tag, skipped))
        self._skip_depth += skipped

    def handle_startendtag(self, tag, attrs):
        if tag in _BLOCK_TAGS:
            self._flush()

    def handle_endtag(self, tag):
        if tag in _BLOCK_TAGS:
            self._flush()
        if not any(t == tag for t, _ in self._open):
            return  # a stray end tag
        while True:  # close elements left open inside it (<p>, <li>)
            open_tag, skipped = self._open.pop()
            self._skip_depth -= skipped
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self._skip_depth == 0:
            self._current.append(data)


def paragraphs(text):
    """The candidate prose paragraphs of an HTML page."""
    extractor = _Extractor()
    extractor.feed(text)
    extractor.close()
    extractor._flush()
    return extractor.paragraphs
