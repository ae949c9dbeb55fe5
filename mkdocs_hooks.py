"""mkdocs hooks (mkdocs.yml ``hooks``): a Python block that needs an optional extra is
fenced ```` ```python needs=EXTRA ```` for the docs' tests (tests/test_docs.py); the site
shows it as a plain Python block."""

from __future__ import annotations

import re
from typing import Any

_NEEDS = re.compile(r"^( *```python) needs=[\w,-]+ *$", re.M)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """The page's Markdown with each ``needs=`` dropped from its fences."""
    return _NEEDS.sub(r"\1", markdown)
