"""`python -m models.coverage > docs/reference/volcano-api-fields.md` prints the page."""

from __future__ import annotations

from models.coverage import page

print(page.page(), end="")
